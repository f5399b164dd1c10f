package io.dstream.shim.ui;

import com.codahale.metrics.Gauge;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;

/**
 * What the Python driver pushed about one StreamingContext: its context document and the
 * documents of its last completed batches, keyed by batch time. Pushes come from the driver's
 * listener thread, reads from the UI's request threads and the metrics sinks: every access is
 * synchronized on this object, and documents are immutable once stored (a batch pushed again
 * replaces its document whole).
 *
 * <p>The documents' fields are defined in {@code dstream/scheduler/webui.py}.
 */
public final class ContextStatus {
  static final ObjectMapper JSON = new ObjectMapper();

  /** Failed batches kept for the "failed batches" table even after they leave the window. */
  static final int RETAINED_FAILED_BATCHES = 100;

  private final String key;
  private final StreamingSource source;
  private StreamingUI ui;
  private int retained = StreamingUI.DEFAULT_RETAINED_BATCHES;
  private JsonNode context;
  private final TreeMap<Long, JsonNode> batches = new TreeMap<>();
  private final TreeMap<Long, JsonNode> failed = new TreeMap<>();
  private boolean stopped;

  private ContextStatus(JsonNode context) {
    this.context = context;
    this.key = context.path("key").asText();
    this.source = new StreamingSource(this);
  }

  static ContextStatus create(String contextJson) {
    JsonNode context = parse(contextJson);
    checkVersion(context);
    if (!context.path("key").isTextual() || context.path("key").asText().isEmpty()) {
      throw new IllegalArgumentException("context document has no \"key\": " + contextJson);
    }
    return new ContextStatus(context);
  }

  synchronized void bind(StreamingUI ui, int retained) {
    this.ui = ui;
    this.retained = retained;
  }

  /**
   * Stores a new context document and the given batch documents (a JSON array; a batch already
   * stored is replaced, so the driver may push a batch again when it learned more about it).
   */
  public void push(String contextJson, String batchesJson) {
    JsonNode newContext = parse(contextJson);
    checkVersion(newContext);
    JsonNode newBatches = parse(batchesJson);
    if (!newBatches.isArray()) {
      throw new IllegalArgumentException("batches must be a JSON array, got " + batchesJson);
    }
    List<JsonNode> docs = new ArrayList<>();
    for (JsonNode batch : newBatches) {
      if (!batch.path("batchId").canConvertToLong()) {
        throw new IllegalArgumentException("a batch document has no \"batchId\": " + batch);
      }
      docs.add(batch);
    }
    synchronized (this) {
      context = newContext;
      for (JsonNode batch : docs) {
        long time = batch.path("batchId").asLong();
        if (!batches.isEmpty() && time < batches.firstKey() && batches.size() >= retained) {
          continue; // older than everything kept: it would be dropped at once
        }
        batches.put(time, batch);
        if (batch.path("failed").asBoolean(false)) {
          failed.put(time, batch);
        } else {
          failed.remove(time);
        }
      }
      while (batches.size() > retained) {
        batches.pollFirstEntry();
      }
      while (failed.size() > RETAINED_FAILED_BATCHES) {
        failed.pollFirstEntry();
      }
    }
    for (JsonNode batch : docs) {
      source.addStateGauges(batch);
    }
  }

  /** The context stopped: stores its last document, shows it as stopped, removes its metrics. */
  public void stop(String contextJson) {
    JsonNode last = parse(contextJson);
    StreamingUI owner;
    synchronized (this) {
      if (stopped) {
        return;
      }
      context = last;
      stopped = true;
      owner = ui;
    }
    if (owner != null) {
      owner.stopped(this);
    }
  }

  // ---------------------------------------------------------------------------- reads

  public String key() {
    return key;
  }

  public synchronized boolean stopped() {
    return stopped;
  }

  /** Batches retained now (for tests and scripts). */
  public synchronized int retainedBatchCount() {
    return batches.size();
  }

  /** The stored document of the batch at {@code timeMs}, as JSON, or null (for tests). */
  public synchronized String batchJson(long timeMs) {
    JsonNode batch = batches.get(timeMs);
    return batch == null ? null : batch.toString();
  }

  /** The metric source's name in Spark's metrics system. */
  public String sourceName() {
    return source.sourceName();
  }

  /**
   * The gauges of this context's source as the driver's metrics system has them: a JSON object
   * from gauge name to value, or null when the source is not registered (the context stopped).
   */
  public String registeredGauges() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return null;
    }
    scala.collection.immutable.Seq<Source> sources =
        env.metricsSystem().getSourcesByName(sourceName());
    if (sources.isEmpty()) {
      return null;
    }
    ObjectNode out = JSON.createObjectNode();
    for (Map.Entry<String, ?> entry : sources.head().metricRegistry().getGauges().entrySet()) {
      out.putPOJO(entry.getKey(), ((Gauge<?>) entry.getValue()).getValue());
    }
    return out.toString();
  }

  StreamingSource source() {
    return source;
  }

  synchronized JsonNode context() {
    return context;
  }

  synchronized JsonNode latest() {
    return batches.isEmpty() ? null : batches.lastEntry().getValue();
  }

  /** The retained batches, oldest first. */
  synchronized List<JsonNode> batches() {
    return new ArrayList<>(batches.values());
  }

  /** The retained failed batches, oldest first. */
  synchronized List<JsonNode> failedBatches() {
    return new ArrayList<>(failed.values());
  }

  synchronized JsonNode batch(long timeMs) {
    JsonNode batch = batches.get(timeMs);
    return batch != null ? batch : failed.get(timeMs);
  }

  synchronized int retained() {
    return retained;
  }

  // ---------------------------------------------------------------------------- helpers

  static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage(), e);
    }
  }

  private static void checkVersion(JsonNode context) {
    int version = context.path("formatVersion").asInt(-1);
    if (version != StreamingUI.FORMAT_VERSION) {
      throw new IllegalArgumentException(
          "the driver sends Streaming tab documents of format "
              + version
              + ", this shim reads format "
              + StreamingUI.FORMAT_VERSION
              + ": rebuild the shim (make shim) and restart the driver");
    }
  }
}
