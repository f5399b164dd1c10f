package io.dstream.shim.ui;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.ui.SparkUI;
import scala.Option;

/**
 * The dstream "Streaming" tab of one SparkContext's web UI, and the contexts it shows.
 *
 * <p>The Python driver calls {@link #attach} once per StreamingContext when it starts: the first
 * call on a SparkContext adds the tab to its {@code SparkUI} (same server, port and filters as
 * Spark's own tabs; none when {@code spark.ui.enabled=false}); every call registers the context's
 * {@link StreamingSource} with the driver's metrics system. The driver then pushes one JSON
 * document per completed batch ({@link ContextStatus#push}) and, when the context stops, its last
 * state ({@link ContextStatus#stop}): the tab keeps showing a stopped context, marked so, and its
 * metrics are removed. Several StreamingContexts on one SparkContext each get their own
 * documents, page and metric names (keyed by the context's id).
 *
 * <p>What is pushed is rendered as it is: this class and its pages compute nothing about
 * streams, they only lay out the numbers the Python engine sends (see {@code
 * dstream/scheduler/webui.py}, the one definition of the documents).
 *
 * <h2>Spark APIs used</h2>
 *
 * Besides public API, members that are {@code private[spark]} in Scala but public in bytecode,
 * as every third-party Spark UI tab uses them: {@code SparkUITab}, {@code WebUIPage}, {@code
 * UIUtils.headerSparkPage}/{@code prependBaseUri}, {@code CspNonce} (Spark's pages allow inline
 * scripts only with the request's nonce), {@code SparkContext.ui()}/{@code statusStore()} (the
 * jobs a batch ran, as the Jobs tab has them), and the metrics {@code Source} trait. The jar is
 * compiled against the exact Spark jars of the installed pyspark, so a change there fails the
 * build rather than a run.
 */
public final class StreamingUI {
  /** Version of the documents' format; the Python side sends the version it writes. */
  public static final int FORMAT_VERSION = 1;

  /** Batches kept per context for the charts and tables (Spark's streaming tab keeps 1000). */
  public static final String RETAINED_BATCHES_CONF = "spark.dstream.ui.retainedBatches";

  public static final int DEFAULT_RETAINED_BATCHES = 1000;

  /** Stopped contexts still shown (the oldest is dropped first). */
  static final int RETAINED_STOPPED_CONTEXTS = 10;

  private static final Map<SparkContext, StreamingUI> INSTALLED = new IdentityHashMap<>();

  private final SparkContext sc;
  private final StreamingTab tab; // null when the SparkContext has no UI
  private final int retainedBatches;
  private final Map<String, ContextStatus> contexts = new LinkedHashMap<>(); // by start order

  private StreamingUI(SparkContext sc) {
    this.sc = sc;
    this.retainedBatches = sc.getConf().getInt(RETAINED_BATCHES_CONF, DEFAULT_RETAINED_BATCHES);
    if (retainedBatches < 1) {
      throw new IllegalArgumentException(
          RETAINED_BATCHES_CONF + " must be at least 1, got " + retainedBatches);
    }
    Option<SparkUI> ui = sc.ui();
    if (ui.isDefined()) {
      tab = new StreamingTab(ui.get(), this);
      ui.get().attachTab(tab);
    } else {
      tab = null;
    }
  }

  /**
   * Adds the context described by {@code contextJson} (its first document) to the Streaming tab
   * of {@code sc}, creating the tab on first use, registers its metrics and returns the handle the
   * driver pushes to.
   *
   * @throws IllegalArgumentException if the document is not of {@link #FORMAT_VERSION}, or a
   *     running context with the same key is already shown
   */
  public static ContextStatus attach(SparkContext sc, String contextJson) {
    if (sc.isStopped()) {
      throw new IllegalStateException("SparkContext is stopped");
    }
    ContextStatus status = ContextStatus.create(contextJson);
    StreamingUI ui;
    synchronized (INSTALLED) {
      ui = INSTALLED.get(sc);
      if (ui == null) {
        ui = new StreamingUI(sc);
        INSTALLED.put(sc, ui);
        sc.addSparkListener(new Forget(sc));
      }
    }
    ui.add(status);
    return status;
  }

  /** Whether {@code sc} shows a Streaming tab (it has a web UI and a context attached). */
  public static boolean hasTab(SparkContext sc) {
    synchronized (INSTALLED) {
      StreamingUI ui = INSTALLED.get(sc);
      return ui != null && ui.tab != null;
    }
  }

  /** The version of the documents this class reads. */
  public static int formatVersion() {
    return FORMAT_VERSION;
  }

  private void add(ContextStatus status) {
    synchronized (contexts) {
      ContextStatus old = contexts.get(status.key());
      if (old != null && !old.stopped()) {
        throw new IllegalArgumentException(
            "a running StreamingContext with key " + status.key() + " is already attached");
      }
      contexts.remove(status.key());
      status.bind(this, retainedBatches);
      contexts.put(status.key(), status);
    }
    SparkEnv.get().metricsSystem().registerSource(status.source());
  }

  /** Called by a context when it stops: its metrics go, and so do old stopped contexts. */
  void stopped(ContextStatus status) {
    SparkEnv env = SparkEnv.get();
    if (env != null) {
      env.metricsSystem().removeSource(status.source());
    }
    synchronized (contexts) {
      List<String> stopped = new ArrayList<>();
      for (ContextStatus c : contexts.values()) {
        if (c.stopped()) {
          stopped.add(c.key());
        }
      }
      for (int i = 0; i < stopped.size() - RETAINED_STOPPED_CONTEXTS; i++) {
        contexts.remove(stopped.get(i));
      }
    }
  }

  /** The contexts shown, newest first. */
  List<ContextStatus> contexts() {
    synchronized (contexts) {
      List<ContextStatus> out = new ArrayList<>(contexts.values());
      java.util.Collections.reverse(out);
      return out;
    }
  }

  SparkContext sparkContext() {
    return sc;
  }

  int retainedBatches() {
    return retainedBatches;
  }

  /** Drops the registry's entry when the application ends (the entry holds the SparkContext). */
  private static final class Forget extends SparkListener {
    private final SparkContext sc;

    Forget(SparkContext sc) {
      this.sc = sc;
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd event) {
      synchronized (INSTALLED) {
        INSTALLED.remove(sc);
      }
    }
  }
}
