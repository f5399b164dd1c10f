package io.dstream.shim;

import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.SchedulingMode;
import org.apache.spark.scheduler.TaskScheduler;
import org.apache.spark.scheduler.TaskSchedulerImpl;

/**
 * Fair-scheduler pools made from the driver, with the weight and minimum share the engine
 * wants (Spark makes a pool it has not been told of with weight 1 and no minimum share when a
 * job first names it; an allocation file is the only other way, and it is read only when the
 * SparkContext starts).
 */
public final class Pools {
  private Pools() {}

  /**
   * Called from Python: makes the pool {@code name} unless it exists. Returns whether the
   * application schedules its jobs fairly ({@code spark.scheduler.mode=FAIR}): without it,
   * pools are ignored.
   */
  public static synchronized boolean ensure(
      SparkContext sc, String name, int weight, int minShare) {
    TaskScheduler scheduler = sc.taskScheduler();
    if (!(scheduler instanceof TaskSchedulerImpl)) {
      return false;
    }
    Pool root = ((TaskSchedulerImpl) scheduler).rootPool();
    if (root.schedulingMode() != SchedulingMode.FAIR()) {
      return false;
    }
    if (root.getSchedulableByName(name) == null) {
      root.addSchedulable(new Pool(name, SchedulingMode.FIFO(), minShare, weight));
    }
    return true;
  }
}
