package io.dstream.shim;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.Success$;
import org.apache.spark.TaskEndReason;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.scheduler.JobFailed;
import org.apache.spark.scheduler.JobResult;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerInterface;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.status.api.v1.ExecutorSummary;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.util.Utils;
import scala.Option;
import scala.collection.Iterator;

/**
 * A thin {@link SparkListener} that turns scheduler events into compact text records which the
 * Python driver reads in batches through Py4J ({@link #drain(int)}: thousands of events per call
 * instead of one call per task). It only observes; it never changes scheduling.
 *
 * <h2>Wire format (format version 2, see {@link #formatVersion()})</h2>
 *
 * <p>{@link #drain(int)} returns zero or more lines, each terminated by {@code '\n'}: one JSON
 * object per event, {@code {"kind":"TASK_START","stage_id":3,...}}. Its keys are the field names
 * of the Python dataclass of that kind in {@code dstream/scheduler/shim.py}, which is the one
 * definition of the format: the Python parser is derived from those dataclasses and refuses an
 * event with a missing, unknown or mistyped field, naming it. Times are epoch milliseconds; a
 * missing value (no job group, a stage not yet submitted) is {@code null}; failure reasons are
 * shortened to at most {@value #MAX_REASON_CHARS} characters (head and tail kept). Kinds:
 * TASK_START, TASK_END, STAGE_SUBMITTED, STAGE_COMPLETED, JOB_START, JOB_END, EXECUTOR_ADDED,
 * EXECUTOR_REMOVED. Notes on individual fields:
 *
 * <ul>
 *   <li>{@code index} is the task's index inside its task set, {@code partition} the RDD
 *       partition it computes (they differ for a retried stage that recomputes only some
 *       partitions); {@code attempt} is {@code TaskInfo.attemptNumber()}.
 *   <li>{@code speculative} is {@code TaskInfo.speculative()}: true for the extra copy launched by
 *       {@code spark.speculation}.
 *   <li>{@code successful} on TASK_END is true iff the end reason is {@code Success}. {@code
 *       reason_kind} is the simple class name of the {@code TaskEndReason} ({@code Success},
 *       {@code ExceptionFailure}, {@code ExecutorLostFailure}, {@code TaskKilled}, {@code
 *       FetchFailed}, {@code Resubmitted}, ...); {@code reason} is null on success, otherwise a
 *       short message (for {@code ExceptionFailure}: exception class name, ": ", message; for the
 *       others {@code TaskFailedReason.toErrorString()}). {@code Resubmitted} ends refer to a task
 *       that had succeeded earlier and whose shuffle output was lost with its executor.
 *   <li>{@code task_type} is {@code ResultTask} or {@code ShuffleMapTask}.
 *   <li>{@code job_group} is the job property {@code spark.jobGroup.id} of the job that submitted
 *       the stage (null if none). For task records it is looked up from the stage id, so it is the
 *       group of the latest job that included the stage.
 *   <li>{@code submission_time} / {@code completion_time} are null when Spark has none (a stage
 *       skipped because its shuffle output already exists is never submitted).
 *   <li>{@code successful} on STAGE_COMPLETED is true iff {@code StageInfo.failureReason()} is
 *       empty.
 *   <li>{@code snapshot} on EXECUTOR_ADDED is true for executors that were already registered
 *       when {@link #install} attached the recorder (their {@code time} is the registration time
 *       recorded by Spark's status store, their {@code host} the executor's block-manager host;
 *       one the status store has not heard of yet but the block manager master has: the time of
 *       the snapshot, {@code total_cores} 0).
 *   <li>{@code host} on EXECUTOR_REMOVED is the host last seen in an EXECUTOR_ADDED record for
 *       that executor, null if unknown.
 * </ul>
 *
 * <h2>Buffering</h2>
 *
 * Records go to a bounded buffer ({@value #DEFAULT_CAPACITY} records by default, override with
 * the Spark conf key {@value #CAPACITY_CONF}); when it is full the oldest record is dropped and
 * counted in {@link #dropped()}. Events that Spark's own listener bus drops (its shared queue
 * overflowing) never reach this recorder at all.
 *
 * <h2>Spark APIs used</h2>
 *
 * The listener callbacks use only public developer API. {@link #install} additionally uses three
 * members that are {@code private[spark]} in Scala but public in bytecode: {@code
 * SparkContext.listenerBus().listeners()} (to adopt a recorder registered by {@code
 * spark.extraListeners}), {@code SparkContext.statusStore().executorList(true)} (the executor
 * snapshot) and {@code Utils.localHostName()}. The jar is compiled against the exact Spark jars
 * of the installed pyspark, so a change there fails the build rather than a run.
 */
public class EventRecorder extends SparkListener {
  /** Version of the line format above; bump it on any change. */
  public static final int FORMAT_VERSION = 2;

  public static final int DEFAULT_CAPACITY = 1_000_000;
  public static final String CAPACITY_CONF = "spark.dstream.shim.capacity";
  public static final int MAX_REASON_CHARS = 1000;

  static final String JOB_GROUP_PROPERTY = "spark.jobGroup.id";

  /** Bound on remembered stage/job/executor ids, so a long-running stream does not leak. */
  private static final int MAX_TRACKED_IDS = 100_000;

  private static final Map<SparkContext, EventRecorder> INSTALLED = new WeakHashMap<>();

  private final EventBuffer buffer;
  private final Object lock = new Object();
  private final Map<Integer, String> stageGroups = boundedMap();
  private final Map<Integer, String> jobGroups = boundedMap();
  private final Map<String, String> executorHosts = boundedMap();
  private final Set<String> removedExecutors = Collections.newSetFromMap(boundedMap());

  /** Creates a recorder with the default capacity (not registered with any SparkContext). */
  public EventRecorder() {
    this(DEFAULT_CAPACITY);
  }

  /** Creates a recorder holding at most {@code capacity} undrained records. */
  public EventRecorder(int capacity) {
    this.buffer = new EventBuffer(capacity);
  }

  /**
   * The constructor Spark uses when the class is listed in {@code spark.extraListeners}; the
   * recorder then sees every event from the start of the application, and {@link #install}
   * returns it instead of registering a second one.
   */
  public EventRecorder(SparkConf conf) {
    this(conf.getInt(CAPACITY_CONF, DEFAULT_CAPACITY));
  }

  /**
   * Returns the recorder attached to {@code sc}, registering a new one with {@link
   * SparkContext#addSparkListener} on the first call. Idempotent per SparkContext (and per
   * class loader that loaded this class). When it registers a new recorder, it also emits an
   * EXECUTOR_ADDED record with source {@code snapshot} for every executor that registered before.
   */
  public static EventRecorder install(SparkContext sc) {
    if (sc.isStopped()) {
      throw new IllegalStateException("SparkContext is stopped");
    }
    synchronized (INSTALLED) {
      EventRecorder recorder = INSTALLED.get(sc);
      if (recorder == null) {
        recorder = findRegistered(sc);
      }
      if (recorder == null) {
        recorder = new EventRecorder(sc.getConf().getInt(CAPACITY_CONF, DEFAULT_CAPACITY));
        sc.addSparkListener(recorder);
        recorder.recordExecutorSnapshot(sc);
      }
      INSTALLED.put(sc, recorder);
      return recorder;
    }
  }

  /** The version of the line format this class writes. */
  public static int formatVersion() {
    return FORMAT_VERSION;
  }

  /** Removes and returns up to {@code max} records, one per line, oldest first. */
  public String drain(int max) {
    return buffer.drain(max);
  }

  /**
   * The executors alive now, as the listener bus reported them: a JSON object from executor id
   * to host.
   */
  public String liveExecutors() {
    StringWriter out = new StringWriter();
    try (JsonGenerator json = JSON.createGenerator(out)) {
      json.writeStartObject();
      synchronized (lock) {
        for (Map.Entry<String, String> entry : executorHosts.entrySet()) {
          json.writeStringField(entry.getKey(), entry.getValue());
        }
      }
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString();
  }

  public long dropped() {
    return buffer.dropped();
  }

  /** Records waiting to be drained. */
  public int pending() {
    return buffer.pending();
  }

  public int capacity() {
    return buffer.capacity();
  }

  // ---------------------------------------------------------------------------------- tasks

  @Override
  public void onTaskStart(SparkListenerTaskStart event) {
    TaskInfo info = event.taskInfo();
    String group;
    synchronized (lock) {
      group = stageGroups.get(event.stageId());
    }
    buffer.add(
        new Line("TASK_START")
            .add("stage_id", event.stageId())
            .add("stage_attempt", event.stageAttemptId())
            .add("task_id", info.taskId())
            .add("index", info.index())
            .add("partition", info.partitionId())
            .add("attempt", info.attemptNumber())
            .str("executor_id", info.executorId())
            .str("host", info.host())
            .add("launch_time", info.launchTime())
            .add("speculative", info.speculative())
            .str("job_group", group)
            .toString());
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    TaskInfo info = event.taskInfo();
    TaskEndReason reason = event.reason();
    boolean successful = reason == Success$.MODULE$;
    String group;
    synchronized (lock) {
      group = stageGroups.get(event.stageId());
    }
    buffer.add(
        new Line("TASK_END")
            .add("stage_id", event.stageId())
            .add("stage_attempt", event.stageAttemptId())
            .add("task_id", info.taskId())
            .add("index", info.index())
            .add("partition", info.partitionId())
            .add("attempt", info.attemptNumber())
            .str("executor_id", info.executorId())
            .str("host", info.host())
            .add("launch_time", info.launchTime())
            .add("finish_time", info.finishTime())
            .add("speculative", info.speculative())
            .add("successful", successful)
            .str("reason_kind", reasonKind(reason))
            .str("reason", successful ? null : shorten(describe(reason)))
            .str("task_type", event.taskType())
            .str("job_group", group)
            .toString());
  }

  // --------------------------------------------------------------------------------- stages

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted event) {
    StageInfo stage = event.stageInfo();
    String group = jobGroup(event.properties());
    synchronized (lock) {
      if (group != null) {
        stageGroups.put(stage.stageId(), group);
      } else {
        group = stageGroups.get(stage.stageId());
      }
    }
    buffer.add(
        new Line("STAGE_SUBMITTED")
            .add("stage_id", stage.stageId())
            .add("attempt", stage.attemptNumber())
            .add("num_tasks", stage.numTasks())
            .time("submission_time", stage.submissionTime())
            .str("job_group", group)
            .str("name", stage.name())
            .toString());
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted event) {
    StageInfo stage = event.stageInfo();
    Option<String> failure = stage.failureReason();
    String group;
    synchronized (lock) {
      group = stageGroups.get(stage.stageId());
    }
    buffer.add(
        new Line("STAGE_COMPLETED")
            .add("stage_id", stage.stageId())
            .add("attempt", stage.attemptNumber())
            .add("num_tasks", stage.numTasks())
            .time("submission_time", stage.submissionTime())
            .time("completion_time", stage.completionTime())
            .add("successful", failure.isEmpty())
            .str("failure_reason", failure.isEmpty() ? null : shorten(failure.get()))
            .str("job_group", group)
            .str("name", stage.name())
            .toString());
  }

  // ----------------------------------------------------------------------------------- jobs

  @Override
  public void onJobStart(SparkListenerJobStart event) {
    String group = jobGroup(event.properties());
    List<Integer> stageIds = new ArrayList<>();
    synchronized (lock) {
      jobGroups.put(event.jobId(), group);
      Iterator<StageInfo> it = event.stageInfos().iterator();
      while (it.hasNext()) {
        int stageId = it.next().stageId();
        if (group != null) {
          stageGroups.put(stageId, group);
        }
        stageIds.add(stageId);
      }
    }
    buffer.add(
        new Line("JOB_START")
            .add("job_id", event.jobId())
            .add("time", event.time())
            .str("job_group", group)
            .ints("stage_ids", stageIds)
            .toString());
  }

  @Override
  public void onJobEnd(SparkListenerJobEnd event) {
    JobResult result = event.jobResult();
    boolean successful = !(result instanceof JobFailed);
    String failure = successful ? null : shorten(String.valueOf(((JobFailed) result).exception()));
    String group;
    synchronized (lock) {
      group = jobGroups.remove(event.jobId());
    }
    buffer.add(
        new Line("JOB_END")
            .add("job_id", event.jobId())
            .add("time", event.time())
            .add("successful", successful)
            .str("failure_reason", failure)
            .str("job_group", group)
            .toString());
  }

  // ------------------------------------------------------------------------------ executors

  @Override
  public void onExecutorAdded(SparkListenerExecutorAdded event) {
    String host = event.executorInfo().executorHost();
    synchronized (lock) {
      executorHosts.put(event.executorId(), host);
      removedExecutors.remove(event.executorId());
      buffer.add(
          new Line("EXECUTOR_ADDED")
              .str("executor_id", event.executorId())
              .str("host", host)
              .add("time", event.time())
              .add("total_cores", event.executorInfo().totalCores())
              .add("snapshot", false)
              .toString());
    }
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
    synchronized (lock) {
      String host = executorHosts.remove(event.executorId());
      removedExecutors.add(event.executorId());
      buffer.add(
          new Line("EXECUTOR_REMOVED")
              .str("executor_id", event.executorId())
              .str("host", host)
              .add("time", event.time())
              .str("reason", shorten(event.reason()))
              .toString());
    }
  }

  /**
   * Emits EXECUTOR_ADDED (source {@code snapshot}) for executors that are active in Spark's status
   * store but that this recorder has not seen come or go. Runs under {@link #lock} after the
   * listener is registered, so a removal that races with it is either seen first (and the
   * executor skipped) or recorded after the snapshot line: the stream never resurrects an
   * executor. The driver's own entry is an executor only in local mode, as in Spark's events.
   */
  private void recordExecutorSnapshot(SparkContext sc) {
    scala.collection.immutable.Seq<ExecutorSummary> active = sc.statusStore().executorList(true);
    boolean local = sc.isLocal();
    synchronized (lock) {
      Iterator<ExecutorSummary> it = active.iterator();
      while (it.hasNext()) {
        ExecutorSummary summary = it.next();
        String id = summary.id();
        if ((!local && "driver".equals(id))
            || executorHosts.containsKey(id)
            || removedExecutors.contains(id)) {
          continue;
        }
        // Spark's own ExecutorAdded for the local-mode driver uses the local host name, while
        // the status store only has the driver block manager's address (spark.driver.host).
        String host = local ? Utils.localHostName() : hostOf(summary.hostPort());
        Date added = summary.addTime();
        executorHosts.put(id, host);
        buffer.add(
            new Line("EXECUTOR_ADDED")
                .str("executor_id", id)
                .str("host", host)
                .add("time", added == null ? System.currentTimeMillis() : added.getTime())
                .add("total_cores", summary.totalCores())
                .add("snapshot", true)
                .toString());
      }
      // The status store hears of an executor from its own listener queue, which may not have
      // reached an ExecutorAdded that the shared queue delivered before this recorder joined
      // it: such an executor would be known to neither (the monitor would count one executor
      // short, and an elastic step would never remove it). The block manager master registers
      // executors synchronously, so every executor registered by now is there.
      Iterator<BlockManagerId> managers =
          sc.env().blockManager().master().getMemoryStatus().keysIterator();
      while (managers.hasNext()) {
        BlockManagerId manager = managers.next();
        String id = manager.executorId();
        if ("driver".equals(id) || executorHosts.containsKey(id) || removedExecutors.contains(id)) {
          continue;
        }
        String host = local ? Utils.localHostName() : manager.host();
        executorHosts.put(id, host);
        buffer.add(
            new Line("EXECUTOR_ADDED")
                .str("executor_id", id)
                .str("host", host)
                .add("time", System.currentTimeMillis())
                .add("total_cores", 0) // not known there; nothing reads it
                .add("snapshot", true)
                .toString());
      }
    }
  }

  // -------------------------------------------------------------------------------- helpers

  private static EventRecorder findRegistered(SparkContext sc) {
    // A recorder registered through spark.extraListeners (same class, same loader).
    for (SparkListenerInterface listener : sc.listenerBus().listeners()) {
      if (listener instanceof EventRecorder) {
        return (EventRecorder) listener;
      }
    }
    return null;
  }

  static String jobGroup(Properties properties) {
    return properties == null ? null : properties.getProperty(JOB_GROUP_PROPERTY);
  }

  static String reasonKind(TaskEndReason reason) {
    if (reason == null) {
      return "UnknownReason";
    }
    String name = reason.getClass().getSimpleName();
    return name.endsWith("$") ? name.substring(0, name.length() - 1) : name;
  }

  static String describe(TaskEndReason reason) {
    if (reason instanceof ExceptionFailure) {
      ExceptionFailure failure = (ExceptionFailure) reason;
      return failure.className() + ": " + failure.description();
    }
    if (reason instanceof TaskFailedReason) {
      return ((TaskFailedReason) reason).toErrorString();
    }
    return String.valueOf(reason);
  }

  /** Keeps the head and the tail (where Python tracebacks put the exception) of long text. */
  static String shorten(String text) {
    if (text == null || text.length() <= MAX_REASON_CHARS) {
      return text;
    }
    int head = MAX_REASON_CHARS / 5;
    String marker = " ... [" + (text.length() - MAX_REASON_CHARS) + " chars elided] ... ";
    int tail = MAX_REASON_CHARS - head - marker.length();
    return text.substring(0, head) + marker + text.substring(text.length() - tail);
  }

  static String hostOf(String hostPort) {
    if (hostPort == null) {
      return null;
    }
    int colon = hostPort.lastIndexOf(':');
    return colon > 0 ? hostPort.substring(0, colon) : hostPort;
  }

  private static <K, V> Map<K, V> boundedMap() {
    return new LinkedHashMap<K, V>(64, 0.75f, false) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > MAX_TRACKED_IDS;
      }
    };
  }

  /** Writes the records' JSON (Jackson's, on Spark's classpath; the Python side parses it). */
  private static final JsonFactory JSON = new JsonFactory();

  /** Builds one record: a JSON object whose first key is the kind. */
  private static final class Line {
    private final StringWriter out = new StringWriter(192);
    private final JsonGenerator json;

    Line(String kind) {
      try {
        json = JSON.createGenerator(out);
        json.writeStartObject();
        json.writeStringField("kind", kind);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Runs one write; a StringWriter never fails, so IOException only wraps a bug. */
    private Line write(Write write) {
      try {
        write.run();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return this;
    }

    Line add(String name, long value) {
      return write(() -> json.writeNumberField(name, value));
    }

    Line add(String name, boolean value) {
      return write(() -> json.writeBooleanField(name, value));
    }

    Line str(String name, String value) {
      return write(() -> json.writeStringField(name, value));
    }

    Line ints(String name, List<Integer> values) {
      return write(
          () -> {
            json.writeArrayFieldStart(name);
            for (int value : values) {
              json.writeNumber(value);
            }
            json.writeEndArray();
          });
    }

    Line time(String name, Option<Object> value) {
      return write(
          () -> {
            if (value.isEmpty()) {
              json.writeNullField(name);
            } else {
              json.writeNumberField(name, ((Number) value.get()).longValue());
            }
          });
    }

    @Override
    public String toString() {
      write(
          () -> {
            json.writeEndObject();
            json.close();
          });
      return out.toString();
    }

    private interface Write {
      void run() throws IOException;
    }
  }
}
