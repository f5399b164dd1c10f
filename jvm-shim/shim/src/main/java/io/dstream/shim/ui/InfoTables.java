package io.dstream.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;

/** The tables about a context's inputs, state streams and executors. */
final class InfoTables {
  /** Batches with stragglers listed under the executor monitor. */
  static final int STRAGGLER_ROWS = 20;

  private InfoTables() {}

  /** What each input read in the latest batch. */
  static String inputs(JsonNode latest) {
    JsonNode sources = latest.path("sources");
    if (sources.size() == 0) {
      return "";
    }
    StringBuilder out = new StringBuilder("<h4>Inputs <small class=\"text-muted\">(batch ");
    out.append(Html.text(latest.path("batchTime"))).append(")</small></h4>");
    out.append("<table id=\"inputs-table\" class=\"table table-bordered table-sm\" ");
    out.append("style=\"width: auto\"><thead><tr><th>Input stream</th><th>Records</th>");
    out.append("<th>Records/sec</th><th>Read</th></tr></thead><tbody>");
    for (JsonNode source : sources) {
      out.append("<tr><td>").append(Html.text(source.path("description"))).append("</td><td>");
      out.append(Html.count(source.path("numInputRows"))).append("</td><td>");
      out.append(Html.rate(source.path("inputRowsPerSecond"))).append("</td><td>");
      out.append(Views.sourceRead(source, 10)).append("</td></tr>");
    }
    return out.append("</tbody></table>\n").toString();
  }

  /** The state streams as of {@code batch}: last checkpoint, lineage depth, memory. */
  static String states(JsonNode batch) {
    JsonNode states = batch.path("stateOperators");
    if (states.size() == 0) {
      return "";
    }
    StringBuilder out = new StringBuilder("<h4>State Streams <small class=\"text-muted\">(batch ");
    out.append(Html.text(batch.path("batchTime"))).append(")</small></h4>");
    out.append("<table id=\"states-table\" class=\"table table-bordered table-sm\" ");
    out.append("style=\"width: auto\"><thead><tr><th>Name</th><th>Operator</th>");
    out.append("<th>Last checkpoint</th><th>Checkpoint age</th><th>Lineage depth</th>");
    out.append("<th>Memory</th></tr></thead><tbody>");
    for (JsonNode state : states) {
      out.append("<tr class=\"state-row\"><td class=\"state-name\">");
      out.append(Html.text(state.path("name"))).append("</td><td>");
      out.append(Html.text(state.path("operator"))).append("</td><td class=\"last-checkpoint\">");
      out.append(Html.text(state.path("lastCheckpoint")));
      out.append("</td><td class=\"checkpoint-age\">");
      out.append(Html.ms(state.path("checkpointAgeMs")));
      out.append("</td><td class=\"lineage-depth\">");
      out.append(Html.text(state.path("lineageDepth"))).append("</td><td class=\"memory\">");
      out.append(Html.bytes(state.path("memoryUsedBytes"))).append("</td></tr>");
    }
    return out.append("</tbody></table>\n").toString();
  }

  /** Live and avoided executors, avoidance actions, and recent batches with stragglers. */
  static String executorMonitor(JsonNode context, List<JsonNode> batches) {
    StringBuilder out = new StringBuilder("<h4>Executors</h4><div id=\"executor-monitor\">");
    JsonNode monitor = context.path("executorMonitor");
    if (!monitor.isObject()) {
      return out.append("<p>The executor monitor is not running.</p></div>").toString();
    }
    out.append("<p>Live: <span id=\"live-executors\">").append(executors(monitor.path("live")));
    out.append("</span>. Avoided (straggled repeatedly): <span id=\"avoided-executors\">");
    JsonNode avoided = monitor.path("avoided");
    if (avoided.size() == 0) {
      out.append("none");
    } else {
      int i = 0;
      for (JsonNode a : avoided) {
        out.append(i++ > 0 ? ", " : "").append(Html.text(a.path("executor"))).append(" (");
        out.append(Html.text(a.path("host"))).append(')');
      }
    }
    out.append("</span>.</p>");
    JsonNode actions = monitor.path("actions");
    if (actions.size() > 0) {
      out.append("<table id=\"executor-actions\" class=\"table table-bordered table-sm\" ");
      out.append("style=\"width: auto\"><thead><tr><th>Time</th><th>Action</th>");
      out.append("<th>Executor</th><th>Host</th><th>Executors asked for</th></tr></thead><tbody>");
      for (JsonNode a : actions) {
        out.append("<tr><td>").append(Html.text(a.path("at"))).append("</td><td>");
        out.append(Html.text(a.path("kind"))).append("</td><td>");
        out.append(Html.text(a.path("executor"))).append("</td><td>");
        out.append(Html.text(a.path("host"))).append("</td><td>");
        out.append(Html.text(a.path("target"))).append("</td></tr>");
      }
      out.append("</tbody></table>");
    }
    StringBuilder rows = new StringBuilder();
    int shown = 0;
    for (int i = batches.size() - 1; i >= 0 && shown < STRAGGLER_ROWS; i--) {
      JsonNode b = batches.get(i);
      JsonNode stragglers = b.path("tasks").path("stragglers");
      if (stragglers.size() > 0) {
        shown++;
        rows.append("<tr><td>").append(Html.text(b.path("batchTime"))).append("</td><td>");
        rows.append(Views.stragglers(b)).append("</td><td>");
        rows.append(Html.text(b.path("tasks").path("tasks"))).append("</td></tr>");
      }
    }
    if (shown == 0) {
      out.append("<p id=\"no-stragglers\">No executor straggled (a task slower than 1.4x its ");
      out.append("stage's median) in the retained batches.</p>");
    } else {
      out.append("<table id=\"stragglers-table\" class=\"table table-bordered table-sm\" ");
      out.append("style=\"width: auto\"><thead><tr><th>Batch</th><th>Straggling executors</th>");
      out.append("<th>Tasks</th></tr></thead><tbody>").append(rows).append("</tbody></table>");
    }
    return out.append("</div>").toString();
  }

  private static String executors(JsonNode live) {
    if (live.size() == 0) {
      return "none";
    }
    StringBuilder out = new StringBuilder();
    for (Map.Entry<String, JsonNode> e : live.properties()) {
      out.append(out.length() > 0 ? ", " : "").append(Html.esc(e.getKey())).append(" (");
      out.append(Html.text(e.getValue())).append(')');
    }
    return out.toString();
  }
}
