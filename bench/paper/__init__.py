"""The paper's measurements (Sec. 5-6, Figures 7 and 10-15) reproduced here: faults and
recovery, stragglers, driver recovery, throughput against Spark's engines, and the two
applications."""
