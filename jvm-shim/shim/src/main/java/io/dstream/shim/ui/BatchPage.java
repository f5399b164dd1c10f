package io.dstream.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import org.apache.spark.status.api.v1.JobData;
import org.apache.spark.ui.WebUIPage;
import scala.collection.immutable.Seq;
import scala.xml.Node;

/**
 * {@code /dstream/batch/?id=<context>&batch=<batch time ms>}: one batch, as Spark's BatchPage:
 * its delays and tasks, each output operation with its Spark jobs, attempts and full error, what
 * each input read, and the state streams as of that batch.
 */
final class BatchPage extends WebUIPage {
  private final StreamingTab tab;

  BatchPage(StreamingTab tab) {
    super("batch");
    this.tab = tab;
  }

  @Override
  public Seq<Node> render(HttpServletRequest request) {
    String key = request.getParameter("id");
    String batchParam = request.getParameter("batch");
    ContextStatus context = null;
    for (ContextStatus c : tab.ui().contexts()) {
      if (c.key().equals(key)) {
        context = c;
      }
    }
    long time;
    try {
      time = Long.parseLong(batchParam == null ? "" : batchParam.strip());
    } catch (NumberFormatException e) {
      time = Long.MIN_VALUE;
    }
    JsonNode batch = context == null ? null : context.batch(time);
    if (batch == null) {
      String what =
          context == null
              ? "No StreamingContext " + Html.esc(key) + " is shown in this tab."
              : "Batch " + Html.esc(batchParam) + " of " + Html.text(context.context().path("id"))
                  + " is not retained (the tab keeps the last " + context.retained()
                  + " batches; spark.dstream.ui.retainedBatches).";
      return Views.page(request, "Batch", "<p id=\"no-batch\">" + what + "</p>", tab);
    }
    String back = Views.url(request, tab, "/" + StreamingTab.PREFIX + "/?id=" + Views.param(key));
    StringBuilder out = new StringBuilder();
    out.append("<p><a href=\"").append(Html.esc(back)).append("\">&larr; ");
    out.append(Html.text(context.context().path("id"))).append("</a></p>");
    out.append(summary(context.context(), batch));
    out.append(outputs(request, batch, SparkJobs.of(tab.ui().sparkContext())));
    out.append(InfoTables.inputs(batch));
    out.append(InfoTables.states(batch));
    return Views.page(
        request, "Details of batch at " + batch.path("batchTime").asText(), out.toString(), tab);
  }

  private static String summary(JsonNode context, JsonNode batch) {
    JsonNode d = batch.path("durationMs");
    JsonNode tasks = batch.path("tasks");
    StringBuilder out = new StringBuilder("<ul id=\"batch-summary\" class=\"list-unstyled\">");
    item(out, "batch-time", "Batch time", Html.text(batch.path("batchTime")));
    item(out, "batch-interval", "Batch interval", Html.ms(context.path("batchDurationMs")));
    item(out, "status", "Status", batch.path("failed").asBoolean(false) ? "failed" : "succeeded");
    item(out, "records", "Input records", Html.count(batch.path("numInputRows")));
    if (batch.path("quarantinedRecords").asLong(0) > 0) {
      item(out, "quarantined", "Records set aside (bad_records=\"quarantine\")",
          Html.count(batch.path("quarantinedRecords")));
    }
    item(out, "scheduling-delay", "Scheduling delay", Html.ms(d.path("schedulingDelay")));
    item(out, "processing-time", "Processing time", Html.ms(d.path("processing")));
    item(out, "total-delay", "Total delay", Html.ms(d.path("totalDelay")));
    String backlog = Html.text(batch.path("backlog"));
    item(out, "backlog", "Backlog (intervals due, not generated)", backlog);
    if (tasks.isObject()) {
      item(out, "tasks", "Tasks", Html.count(tasks.path("tasks")) + " ("
          + Html.count(tasks.path("speculative")) + " speculative, "
          + Html.count(tasks.path("failed")) + " failed) on executors "
          + list(tasks.path("executors")));
      item(out, "stragglers", "Straggling executors", Views.stragglers(batch));
    }
    return out.append("</ul>").toString();
  }

  private static void item(StringBuilder out, String id, String label, String html) {
    out.append("<li id=\"").append(id).append("\"><strong>").append(label).append(":</strong> ");
    out.append(html).append("</li>");
  }

  private static String list(JsonNode values) {
    if (values.size() == 0) {
      return "-";
    }
    StringBuilder out = new StringBuilder();
    for (JsonNode v : values) {
      out.append(out.length() > 0 ? ", " : "").append(Html.text(v));
    }
    return out.toString();
  }

  private String outputs(HttpServletRequest request, JsonNode batch, SparkJobs jobs) {
    StringBuilder out = new StringBuilder("<h4>Output Operations</h4>");
    out.append("<table id=\"outputs-table\" class=\"table table-bordered table-sm\">");
    out.append("<thead><tr><th>#</th><th>Output operation</th><th>Duration</th>");
    out.append("<th>Attempts</th><th>Status</th><th>Spark jobs</th><th>Error</th></tr></thead>");
    out.append("<tbody>");
    int index = 0;
    for (JsonNode output : batch.path("outputs")) {
      List<JobData> outputJobs = Views.outputJobs(jobs, batch, output);
      JsonNode failure = output.path("failure");
      out.append("<tr class=\"output-row\"><td>").append(index++).append("</td><td>");
      out.append(Html.text(output.path("name"))).append("</td><td>");
      out.append(Html.ms(output.path("durationMs"))).append("</td><td>");
      out.append(Html.text(output.path("attempts"))).append("</td><td>");
      out.append(failure.isTextual() ? "failed" : "succeeded").append("</td><td class=\"jobs\">");
      out.append(Views.jobLinks(request, tab, outputJobs)).append("</td><td class=\"error\">");
      if (failure.isTextual()) {
        out.append("<pre style=\"white-space: pre-wrap; max-width: 60em;\">");
        out.append(Html.esc(failure.asText())).append("</pre>");
      }
      out.append("</td></tr>");
    }
    return out.append("</tbody></table>").toString();
  }
}
