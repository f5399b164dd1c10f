package io.dstream.shim.ui;

import com.fasterxml.jackson.databind.JsonNode;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

  /**
   * The first line of a failed output's error (dstream.scheduler.failures): "batch T, output
   * operation #I (LABEL): OPERATOR failed WHERE: CAUSE".
   */
  private static final Pattern FAILURE =
      Pattern.compile("batch [^,]*, output operation #\\d+ \\((.*?)\\): (.+?) failed (in a task|on"
          + " the driver): (.*)");

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
      String key = field.getKey();
      JsonNode value = field.getValue();
      if (SOURCE_COUNTS.contains(key)) {
        continue;
      }
      if (key.endsWith("_count") && source.path(key.substring(0, key.length() - 6)).isArray()) {
        continue; // the total of a list that may be cut short: shown with the list
      }
      if (value.isArray()) {
        // A list with its total ("skipped" and "skipped_count"): the total is the count.
        JsonNode total = source.path(key + "_count");
        int count = total.isNumber() ? total.asInt() : value.size();
        if (count == 0) {
          continue; // nothing to say ("0 skipped" was noise in every row)
        }
        out.append("<div class=\"source-").append(Html.esc(key)).append("\">");
        out.append(count).append(' ').append(Html.esc(key.replace('_', ' ')));
        out.append(":<ul class=\"mb-0\">");
        int shown = 0;
        for (JsonNode item : value) {
          if (shown++ == limit) {
            break;
          }
          out.append("<li><code>").append(Html.text(item)).append("</code></li>");
        }
        if (count > Math.min(limit, value.size())) {
          out.append("<li>... and ").append(count - Math.min(limit, value.size()));
          out.append(" more</li>");
        }
        out.append("</ul></div>");
      } else {
        out.append("<div>").append(Html.esc(key.replace('_', ' '))).append(": ");
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

  /**
   * The failures of a batch's output operations, or "": the exception first (at most
   * {@code maxChars}), then where it was raised; the whole error in the tooltip.
   */
  static String batchError(JsonNode batch, int maxChars) {
    StringBuilder out = new StringBuilder();
    for (JsonNode output : batch.path("outputs")) {
      JsonNode failure = output.path("failure");
      if (failure.isTextual()) {
        String first = Html.firstLine(failure.asText(), Integer.MAX_VALUE);
        String cause = first;
        String where = "";
        Matcher m = FAILURE.matcher(first);
        if (m.matches()) {
          cause = m.group(4);
          where = m.group(2) + ", " + m.group(3);
          if (!m.group(1).equals(m.group(2))) {
            where += ", output " + m.group(1);
          }
        }
        out.append("<div class=\"batch-error\" title=\"").append(Html.esc(failure.asText()));
        out.append("\">").append(Html.esc(Html.firstLine(cause, maxChars)));
        if (!where.isEmpty()) {
          out.append(" <small class=\"text-muted\">(").append(Html.esc(where)).append(")</small>");
        }
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
