package io.dstream.shim.ui;

import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;

/**
 * The "Streaming" tab: {@code /dstream/} (the contexts and one context's statistics) and {@code
 * /dstream/batch/} (one batch). Its URL prefix is not Spark's {@code streaming}, so that a program
 * that also runs pyspark.streaming keeps both tabs.
 */
final class StreamingTab extends SparkUITab {
  static final String PREFIX = "dstream";

  private final StreamingUI ui;

  StreamingTab(SparkUI parent, StreamingUI ui) {
    super(parent, PREFIX);
    this.ui = ui;
    attachPage(new StreamingPage(this));
    attachPage(new BatchPage(this));
  }

  @Override
  public String name() {
    return "Streaming";
  }

  StreamingUI ui() {
    return ui;
  }
}
