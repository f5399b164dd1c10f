package io.dstream.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.apache.spark.ui.UIUtils;
import org.apache.spark.ui.WebUIPage;
import scala.collection.immutable.Seq;
import scala.xml.Node;

/**
 * {@code /dstream/?id=<context>}: the StreamingContexts of this SparkContext, then one context's
 * statistics, laid out as Spark's Streaming tab: timelines and histograms of input rate,
 * scheduling delay, processing time and total delay; the inputs, the state streams, the executor
 * monitor's findings; failed and completed batches with their output operations, Spark jobs,
 * what they read and their errors.
 */
final class StreamingPage extends WebUIPage {
  /** Rows of the completed-batches table (the charts use every retained batch). */
  static final int TABLE_ROWS = 100;

  private final StreamingTab tab;

  StreamingPage(StreamingTab tab) {
    super("");
    this.tab = tab;
  }

  @Override
  public Seq<Node> render(HttpServletRequest request) {
    List<ContextStatus> contexts = tab.ui().contexts();
    ContextStatus selected = select(contexts, request.getParameter("id"));
    StringBuilder html = new StringBuilder();
    html.append("<script src=\"").append(Html.esc(Views.url(request, tab, "/static/d3.min.js")));
    html.append("\"></script>\n<link rel=\"stylesheet\" type=\"text/css\" href=\"");
    html.append(Html.esc(Views.url(request, tab, "/static/streaming-page.css"))).append("\"/>\n");
    html.append(contextsTable(request, contexts, selected));
    if (selected == null) {
      html.append("<p id=\"no-context\">No dstream StreamingContext has started on this ");
      html.append("SparkContext yet.</p>");
    } else {
      html.append(context(request, selected));
    }
    return Views.page(request, "Streaming Statistics", html.toString(), tab);
  }

  /** The context asked for, else the newest running one, else the newest. */
  static ContextStatus select(List<ContextStatus> contexts, String key) {
    for (ContextStatus c : contexts) {
      if (c.key().equals(key)) {
        return c;
      }
    }
    for (ContextStatus c : contexts) {
      if (!c.stopped()) {
        return c;
      }
    }
    return contexts.isEmpty() ? null : contexts.get(0);
  }

  private String contextsTable(
      HttpServletRequest request, List<ContextStatus> contexts, ContextStatus selected) {
    if (contexts.isEmpty()) {
      return "";
    }
    StringBuilder out = new StringBuilder("<h4>StreamingContexts</h4>\n");
    out.append("<table id=\"contexts-table\" class=\"table table-bordered table-sm\" ");
    out.append("style=\"width: auto\"><thead><tr><th>Context</th><th>Status</th>");
    out.append("<th>Batch interval</th><th>Started</th><th>Completed batches</th>");
    out.append("<th>Failed batches</th><th>Records</th><th>Last batch</th></tr></thead><tbody>");
    for (ContextStatus c : contexts) {
      JsonNode doc = c.context();
      JsonNode latest = c.latest();
      String path = "/" + StreamingTab.PREFIX + "/?id=" + Views.param(c.key());
      String href = Views.url(request, tab, path);
      out.append("<tr data-context=\"").append(Html.esc(c.key())).append('"');
      if (c == selected) {
        out.append(" class=\"table-active\"");
      }
      out.append("><td><a href=\"").append(Html.esc(href)).append("\">");
      out.append(Html.text(doc.path("id"))).append("</a></td><td class=\"context-status\">");
      out.append(status(c)).append("</td><td>");
      out.append(UIUtils.formatDurationVerbose(doc.path("batchDurationMs").asLong()));
      out.append("</td><td>").append(Html.text(doc.path("startedAt"))).append("</td><td>");
      out.append(Html.count(doc.path("totals").path("batches"))).append("</td><td>");
      out.append(Html.count(doc.path("totals").path("failedBatches"))).append("</td><td>");
      out.append(Html.count(doc.path("totals").path("inputRows"))).append("</td><td>");
      out.append(latest == null ? "-" : Html.text(latest.path("batchTime")));
      out.append("</td></tr>");
    }
    return out.append("</tbody></table>\n").toString();
  }

  static String status(ContextStatus c) {
    JsonNode doc = c.context();
    if (c.stopped()) {
      return "stopped at " + Html.text(doc.path("stoppedAt"));
    }
    return "running";
  }

  private String context(HttpServletRequest request, ContextStatus c) {
    JsonNode doc = c.context();
    List<JsonNode> batches = c.batches();
    StringBuilder out = new StringBuilder();
    out.append("<div id=\"context\" data-context=\"").append(Html.esc(c.key())).append("\">");
    out.append("<h4>").append(Html.text(doc.path("id"))).append(" <small class=\"text-muted\">");
    out.append(Html.text(doc.path("name"))).append("</small></h4>\n<p id=\"context-summary\">");
    String interval = UIUtils.formatDurationVerbose(doc.path("batchDurationMs").asLong());
    if (c.stopped()) {
      out.append("<strong>Stopped</strong> at <strong>").append(Html.text(doc.path("stoppedAt")));
      out.append("</strong>; ran batches of <strong>").append(interval).append("</strong> from ");
    } else {
      out.append("Running batches of <strong>").append(interval).append("</strong> since ");
    }
    out.append("<strong>").append(Html.text(doc.path("startedAt"))).append("</strong> (<strong>");
    out.append(Html.count(doc.path("totals").path("batches"))).append("</strong> completed ");
    out.append("batches, <strong>").append(Html.count(doc.path("totals").path("failedBatches")));
    out.append("</strong> failed, <strong>");
    out.append(Html.count(doc.path("totals").path("inputRows")));
    out.append("</strong> records)</p>\n");
    if (batches.isEmpty()) {
      out.append("<p id=\"no-batches\">No batch has completed yet.</p>");
    } else {
      out.append(statTable(request, doc, batches));
      JsonNode latest = batches.get(batches.size() - 1);
      out.append(InfoTables.inputs(latest));
      out.append(InfoTables.states(latest));
    }
    out.append(InfoTables.executorMonitor(doc, batches));
    if (!c.stopped()) {
      out.append(activeTable(doc));
    }
    SparkJobs jobs = SparkJobs.of(tab.ui().sparkContext());
    List<JsonNode> failed = c.failedBatches();
    if (!failed.isEmpty()) {
      out.append("<h4 id=\"failed\">Failed Batches (").append(failed.size()).append(")</h4>");
      out.append(batchTable(request, c, "failed-batches-table", newest(failed, TABLE_ROWS), jobs));
    }
    if (!batches.isEmpty()) {
      List<JsonNode> shown = newest(batches, TABLE_ROWS);
      out.append("<h4 id=\"completed\">Completed Batches (last ").append(shown.size());
      out.append(" of ").append(Html.count(doc.path("totals").path("batches"))).append(")</h4>");
      out.append(batchTable(request, c, "completed-batches-table", shown, jobs));
    }
    return out.append("</div>").toString();
  }

  /** Batches generated and not completed (queued or processing), and the due intervals the
   *  backlog bound holds back: what piles up when a program falls behind. */
  private static String activeTable(JsonNode doc) {
    JsonNode active = doc.path("activeBatches");
    long held = doc.path("notGenerated").asLong(0);
    StringBuilder out = new StringBuilder("<h4 id=\"active\">Active Batches (");
    out.append(active.size()).append(")</h4>");
    if (held > 0) {
      out.append("<p id=\"not-generated\"><strong>").append(held).append("</strong> due ");
      out.append("intervals not generated yet (at most StreamingSettings.max_backlog run ");
      out.append("ahead of the completed ones)</p>");
    }
    if (active.size() == 0) {
      return out.append("<p id=\"no-active-batches\">None: every interval due has completed.</p>")
          .toString();
    }
    out.append("<table id=\"active-batches-table\" class=\"table table-bordered table-sm ");
    out.append("table-striped\"><thead><tr><th>Batch Time</th><th>Status</th>");
    out.append("<th>Submitted</th><th>Output Ops: Succeeded/Total</th></tr></thead><tbody>");
    for (JsonNode b : active) {
      out.append("<tr class=\"batch-row\" data-batch-id=\"").append(b.path("batchId").asLong());
      out.append("\"><td class=\"batch-time\">").append(Html.text(b.path("batchTime")));
      out.append("</td><td class=\"status\">").append(Html.text(b.path("status")));
      out.append("</td><td class=\"submitted\">").append(Html.text(b.path("submittedAt")));
      out.append("</td><td class=\"outputs\">").append(b.path("outputsDone").asLong());
      out.append("/").append(b.path("outputsTotal").asLong()).append("</td></tr>");
    }
    return out.append("</tbody></table>\n").toString();
  }

  private static List<JsonNode> newest(List<JsonNode> oldestFirst, int n) {
    int size = oldestFirst.size();
    List<JsonNode> out = new ArrayList<>(oldestFirst.subList(Math.max(0, size - n), size));
    Collections.reverse(out);
    return out;
  }

  private String statTable(HttpServletRequest request, JsonNode doc, List<JsonNode> batches) {
    int n = batches.size();
    long[] xs = new long[n];
    double[] rate = new double[n];
    double[] scheduling = new double[n];
    double[] processing = new double[n];
    double[] total = new double[n];
    Charts charts = new Charts(Views.url(request, tab, "/static/streaming-page.js"));
    double maxRate = 1;
    double maxDelay = 1;
    for (int i = 0; i < n; i++) {
      JsonNode b = batches.get(i);
      xs[i] = b.path("batchId").asLong();
      String time = b.path("batchTime").asText("");
      int space = time.indexOf(' ');
      charts.time(xs[i], space >= 0 ? time.substring(space + 1) : time, time);
      rate[i] = b.path("inputRowsPerSecond").asDouble(0);
      JsonNode d = b.path("durationMs");
      scheduling[i] = d.path("schedulingDelay").asDouble(0);
      processing[i] = d.path("processing").asDouble(0);
      total[i] = d.path("totalDelay").asDouble(0);
      maxRate = Math.max(maxRate, Math.ceil(rate[i]));
      maxDelay = Math.max(maxDelay, Math.max(scheduling[i], Math.max(processing[i], total[i])));
    }
    long minX = xs[0];
    long maxX = xs[n - 1];
    double interval = doc.path("batchDurationMs").asDouble();
    StringBuilder out = new StringBuilder();
    out.append("<table id=\"stat-table\" class=\"table table-bordered\" style=\"width: auto\">");
    out.append("<thead><tr><th style=\"width: 160px;\"></th><th style=\"width: 492px;\">");
    out.append("Timelines (last ").append(n).append(" batches)</th>");
    out.append("<th style=\"width: 350px;\">Histograms</th></tr></thead><tbody>");
    Axis x = new Axis(xs, minX, maxX);
    out.append(
        row(charts, "input-rate", "Input Rate", "records/sec", avg(rate, "%,.2f records/sec"),
            "Records read per second of batch time", x, rate, maxRate, null));
    out.append(
        row(charts, "scheduling-delay", "Scheduling Delay", "ms", avg(scheduling, "%,.0f ms"),
            "From the batch time until its first job started (includes job generation)",
            x, scheduling, maxDelay, null));
    out.append(
        row(charts, "processing-time", "Processing Time", "ms", avg(processing, "%,.0f ms"),
            "From the batch's first job's start until its last job's end",
            x, processing, maxDelay, interval));
    out.append(
        row(charts, "total-delay", "Total Delay", "ms", avg(total, "%,.0f ms"),
            "From the batch time until the batch completed", x, total, maxDelay, null));
    out.append("</tbody></table>\n");
    return out.append(charts.scripts()).toString();
  }

  private static String avg(double[] values, String format) {
    double sum = 0;
    for (double v : values) {
      sum += v;
    }
    return String.format(Locale.ROOT, format, sum / values.length);
  }

  /** The batch times of the timelines, and their range. */
  private record Axis(long[] xs, long min, long max) {}

  private static String row(Charts charts, String id, String title, String unit, String avg,
      String help, Axis x, double[] ys, double maxY, Double line) {
    String[] cells = charts.series(id, x.xs(), ys, x.min(), x.max(), maxY, unit, line);
    return "<tr id=\"" + id + "\"><td style=\"vertical-align: middle;\"><div style=\"width: "
        + "160px;\"><div><strong title=\"" + Html.esc(help) + "\">" + title + "</strong></div>"
        + "<div class=\"avg\">Avg: " + Html.esc(avg) + "</div></div></td><td class=\"timeline\">"
        + cells[0] + "</td><td class=\"histogram\">" + cells[1] + "</td></tr>";
  }

  private String batchTable(HttpServletRequest request, ContextStatus c, String id,
      List<JsonNode> batches, SparkJobs jobs) {
    StringBuilder out = new StringBuilder();
    out.append("<table id=\"").append(id).append("\" class=\"table table-bordered table-sm ");
    out.append("table-striped sortable\"><thead><tr><th>Batch Time</th><th>Records</th>");
    out.append("<th>Scheduling Delay</th><th>Processing Time</th><th>Total Delay</th>");
    out.append("<th>Output Ops: Succeeded/Total</th><th>Spark Jobs</th><th>Read</th>");
    out.append("<th>Stragglers</th><th>Error</th></tr></thead><tbody>");
    for (JsonNode b : batches) {
      long time = b.path("batchId").asLong();
      boolean failed = b.path("failed").asBoolean(false);
      JsonNode d = b.path("durationMs");
      out.append("<tr class=\"batch-row\" data-batch-id=\"").append(time).append("\">");
      out.append("<td id=\"batch-").append(time).append("\" isFailed=\"").append(failed);
      out.append("\" sorttable_customkey=\"").append(time).append("\" class=\"batch-time\">");
      out.append(Views.batchLink(request, tab, c, b)).append("</td>");
      out.append("<td class=\"records\">").append(Html.count(b.path("numInputRows")));
      if (b.path("quarantinedRecords").asLong(0) > 0) {
        out.append(" <span class=\"quarantined\">(").append(Html.count(b.path("quarantinedRecords")));
        out.append(" set aside)</span>");
      }
      out.append("</td>");
      out.append("<td class=\"scheduling-delay\">").append(Html.ms(d.path("schedulingDelay")));
      out.append("</td><td class=\"processing-time\">").append(Html.ms(d.path("processing")));
      out.append("</td><td class=\"total-delay\">").append(Html.ms(d.path("totalDelay")));
      out.append("</td><td class=\"outputs\">").append(Views.outputsDone(b)).append("</td>");
      out.append("<td class=\"jobs\">");
      out.append(Views.jobLinks(request, tab, Views.batchJobs(jobs, b)));
      out.append("</td><td class=\"read\">").append(Views.batchRead(b, 3)).append("</td>");
      out.append("<td class=\"stragglers\">").append(Views.stragglers(b)).append("</td>");
      out.append("<td class=\"error\">").append(Views.batchError(b, 1000)).append("</td></tr>");
    }
    return out.append("</tbody></table>\n").toString();
  }
}
