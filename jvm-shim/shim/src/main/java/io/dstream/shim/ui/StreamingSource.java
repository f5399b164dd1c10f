package io.dstream.shim.ui;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Function;
import org.apache.spark.metrics.source.Source;

/**
 * One StreamingContext's numbers as gauges of Spark's metrics system, so that the sinks a Spark
 * user configures (PrometheusServlet, JMX, CSV, Graphite...) export them. Every gauge reads the
 * latest documents the driver pushed; a value not known (no batch completed yet, no executor
 * monitor, a state never checkpointed) reads as -1, as in Spark's own streaming source.
 *
 * <p>Source name {@code dstream.<context id>}; the full names are therefore {@code
 * <spark.metrics.namespace or app id>.driver.dstream.<context id>.<gauge>}. The gauge names are
 * listed in the README ("Watching a running stream").
 */
public final class StreamingSource implements Source {
  private final ContextStatus status;
  private final MetricRegistry registry = new MetricRegistry();
  private final Set<String> stateGauges = new HashSet<>();

  StreamingSource(ContextStatus status) {
    this.status = status;
    contextGauge("batchDurationMs", c -> c.path("batchDurationMs"));
    contextGauge("totalCompletedBatches", c -> c.path("totals").path("batches"));
    contextGauge("totalFailedBatches", c -> c.path("totals").path("failedBatches"));
    contextGauge("totalInputRecords", c -> c.path("totals").path("inputRows"));
    registry.register(
        "executors.avoided",
        (Gauge<Long>)
            () -> {
              JsonNode avoided = status.context().path("executorMonitor").path("avoided");
              return avoided.isArray() ? (long) avoided.size() : -1L;
            });
    batchGauge("lastCompletedBatch.time", b -> b.path("batchId"));
    batchGauge("lastCompletedBatch.inputRecords", b -> b.path("numInputRows"));
    batchGauge(
        "lastCompletedBatch.schedulingDelayMs", b -> b.path("durationMs").path("schedulingDelay"));
    batchGauge("lastCompletedBatch.processingTimeMs", b -> b.path("durationMs").path("processing"));
    batchGauge("lastCompletedBatch.totalDelayMs", b -> b.path("durationMs").path("totalDelay"));
    batchGauge("lastCompletedBatch.backlog", b -> b.path("backlog"));
    batchGauge("lastCompletedBatch.tasks", b -> b.path("tasks").path("tasks"));
    batchGauge("lastCompletedBatch.failedTasks", b -> b.path("tasks").path("failed"));
    batchGauge("lastCompletedBatch.speculativeTasks", b -> b.path("tasks").path("speculative"));
    registry.register(
        "lastCompletedBatch.stragglers",
        (Gauge<Long>)
            () -> {
              JsonNode batch = status.latest();
              JsonNode stragglers = batch == null ? null : batch.path("tasks").path("stragglers");
              return stragglers != null && stragglers.isArray() ? (long) stragglers.size() : -1L;
            });
    registry.register(
        "lastCompletedBatch.failed",
        (Gauge<Long>)
            () -> {
              JsonNode batch = status.latest();
              return batch == null ? -1L : batch.path("failed").asBoolean(false) ? 1L : 0L;
            });
    rateGauge("lastCompletedBatch.inputRate", "inputRowsPerSecond");
    rateGauge("lastCompletedBatch.processingRate", "processedRowsPerSecond");
  }

  @Override
  public String sourceName() {
    return "dstream." + status.key();
  }

  @Override
  public MetricRegistry metricRegistry() {
    return registry;
  }

  /**
   * Registers the gauges of state streams that appear in {@code batch} for the first time:
   * {@code state.<metricName>.checkpointAgeMs}, {@code .lineageDepth}, {@code .memoryUsedBytes}
   * (the driver gives every state stream a unique {@code metricName}).
   */
  void addStateGauges(JsonNode batch) {
    if (batch == null) {
      return;
    }
    for (JsonNode state : batch.path("stateOperators")) {
      String name = state.path("metricName").asText("");
      if (name.isEmpty()) {
        continue;
      }
      synchronized (stateGauges) {
        if (!stateGauges.add(name)) {
          continue;
        }
      }
      stateGauge(name, "checkpointAgeMs");
      stateGauge(name, "lineageDepth");
      stateGauge(name, "memoryUsedBytes");
    }
  }

  private void stateGauge(String state, String field) {
    registry.register(
        "state." + state + "." + field,
        (Gauge<Long>)
            () -> {
              JsonNode batch = status.latest();
              if (batch == null) {
                return -1L;
              }
              for (JsonNode s : batch.path("stateOperators")) {
                if (state.equals(s.path("metricName").asText())) {
                  return number(s.path(field));
                }
              }
              return -1L;
            });
  }

  private void contextGauge(String name, Function<JsonNode, JsonNode> field) {
    registry.register(name, (Gauge<Long>) () -> number(field.apply(status.context())));
  }

  private void batchGauge(String name, Function<JsonNode, JsonNode> field) {
    registry.register(
        name,
        (Gauge<Long>)
            () -> {
              JsonNode batch = status.latest();
              return batch == null ? -1L : number(field.apply(batch));
            });
  }

  private void rateGauge(String name, String field) {
    registry.register(
        name,
        (Gauge<Double>)
            () -> {
              JsonNode batch = status.latest();
              JsonNode value = batch == null ? null : batch.path(field);
              return value != null && value.isNumber() ? value.asDouble() : -1.0;
            });
  }

  static long number(JsonNode value) {
    return value != null && value.isNumber() ? value.asLong() : -1L;
  }
}
