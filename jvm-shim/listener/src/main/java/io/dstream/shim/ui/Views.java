package io.dstream.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.status.api.v1.JobData;
import org.apache.spark.ui.UIUtils;
import scala.Function0;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.xml.Node;
import scala.xml.Unparsed;

/** What both pages draw: links, job lists, what a source read, the page frame. */
final class Views {
  /** Keys of a source entry that are not about what it read. */
  private static final Set<String> SOURCE_COUNTS =
      Set.of("description", "numInputRows", "inputRowsPerSecond");

  private Views() {}

  /** The page with Spark's header and tabs around {@code body}. */
  static Seq<Node> page(HttpServletRequest request, String title, String body, StreamingTab tab) {
    Function0<Seq<Node>> content = () -> new Unparsed(body);
    return UIUtils.headerSparkPage(
        request,
        title,
        content,
        tab,
        Option.empty(),
        UIUtils.headerSparkPage$default$6(),
        UIUtils.headerSparkPage$default$7(),
        UIUtils.headerSparkPage$default$8());
  }

  /** A URL of the UI (Spark's own pages or this tab's), with the proxy base path if any. */
  static String url(HttpServletRequest request, StreamingTab tab, String path) {
    return UIUtils.prependBaseUri(request, tab.basePath(), path);
  }

  static String param(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  /** The link to one batch's page. */
  static String batchLink(
      HttpServletRequest request, StreamingTab tab, ContextStatus context, JsonNode batch) {
    String href =
        url(
            request,
            tab,
            "/" + StreamingTab.PREFIX + "/batch/?id=" + param(context.key()) + "&batch="
                + batch.path("batchId").asLong());
    return "<a href=\"" + Html.esc(href) + "\">" + Html.text(batch.path("batchTime")) + "</a>";
  }

  /** Links to Spark's job pages, each marked with the job's status. */
  static String jobLinks(HttpServletRequest request, StreamingTab tab, List<JobData> jobs) {
    if (jobs.isEmpty()) {
      return "-";
    }
    StringBuilder out = new StringBuilder();
    for (JobData job : jobs) {
      if (out.length() > 0) {
        out.append(", ");
      }
      String status = job.status().name();
      String href = url(request, tab, "/jobs/job/?id=" + job.jobId());
      out.append("<a class=\"job-link\" data-job-id=\"").append(job.jobId());
      out.append("\" data-status=\"").append(status).append("\" href=\"");
      out.append(Html.esc(href)).append("\" title=\"").append(status).append('"');
      if ("FAILED".equals(status)) {
        out.append(" style=\"color: #c0392b;\"");
      }
      out.append('>').append(job.jobId()).append("</a>");
    }
    return out.toString();
  }

  /** Every job of a batch, over its output operations (by the descriptions the driver gave). */
  static List<JobData> batchJobs(SparkJobs jobs, JsonNode batch) {
    return jobs.ofGroup(batch.path("jobGroup").asText(""));
  }

  /** The jobs of one output operation of a batch. */
  static List<JobData> outputJobs(SparkJobs jobs, JsonNode batch, JsonNode output) {
    return jobs.of(batch.path("jobGroup").asText(""), output.path("jobDescription").asText(""));
  }

  /**
   * What one source read (its files, offsets or other metadata), at most {@code limit} files
   * listed; "-" when it says nothing beyond its counts.
   */
  static String sourceRead(JsonNode source, int limit) {
    StringBuilder out = new StringBuilder();
    for (Map.Entry<String, JsonNode> field : source.properties()) {
      if (SOURCE_COUNTS.contains(field.getKey())) {
        continue;
      }
      JsonNode value = field.getValue();
      if (value.isArray()) {
        out.append("<div class=\"source-").append(Html.esc(field.getKey())).append("\">");
        out.append(value.size()).append(' ').append(Html.esc(field.getKey()));
        if (value.size() > 0) {
          out.append(":<ul class=\"mb-0\">");
          int shown = 0;
          for (JsonNode item : value) {
            if (shown++ == limit) {
              out.append("<li>... and ").append(value.size() - limit).append(" more</li>");
              break;
            }
            out.append("<li><code>").append(Html.text(item)).append("</code></li>");
          }
          out.append("</ul>");
        }
        out.append("</div>");
      } else {
        out.append("<div>").append(Html.esc(field.getKey())).append(": ");
        out.append(Html.text(value)).append("</div>");
      }
    }
    return out.length() == 0 ? "-" : out.toString();
  }

  /** What every source of a batch read, one block per source that read anything. */
  static String batchRead(JsonNode batch, int limit) {
    StringBuilder out = new StringBuilder();
    for (JsonNode source : batch.path("sources")) {
      String read = sourceRead(source, limit);
      if (!"-".equals(read)) {
        out.append(read);
      }
    }
    return out.length() == 0 ? "-" : out.toString();
  }

  /** The failures of a batch's output operations (first lines), or "". */
  static String batchError(JsonNode batch, int maxChars) {
    StringBuilder out = new StringBuilder();
    for (JsonNode output : batch.path("outputs")) {
      JsonNode failure = output.path("failure");
      if (failure.isTextual()) {
        out.append("<div class=\"batch-error\" title=\"").append(Html.esc(failure.asText()));
        out.append("\">").append(Html.esc(Html.firstLine(failure.asText(), maxChars)));
        out.append("</div>");
      }
    }
    return out.toString();
  }

  /** "2/3": output operations that succeeded, of all. */
  static String outputsDone(JsonNode batch) {
    int total = 0;
    int ok = 0;
    for (JsonNode output : batch.path("outputs")) {
      total++;
      if (!output.path("failure").isTextual()) {
        ok++;
      }
    }
    return ok + "/" + total;
  }

  /** The executors that straggled in a batch ("-" for none, "?" without the monitor). */
  static String stragglers(JsonNode batch) {
    JsonNode tasks = batch.path("tasks");
    if (!tasks.isObject()) {
      return "?";
    }
    JsonNode stragglers = tasks.path("stragglers");
    if (!stragglers.isArray() || stragglers.size() == 0) {
      return "-";
    }
    StringBuilder out = new StringBuilder();
    for (JsonNode executor : stragglers) {
      if (out.length() > 0) {
        out.append(", ");
      }
      out.append(Html.text(executor));
    }
    return out.toString();
  }
}
