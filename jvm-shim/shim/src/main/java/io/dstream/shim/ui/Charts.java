package io.dstream.shim.ui;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.ui.CspNonce;

/**
 * Timelines and histograms drawn in the browser by Spark's own {@code /static/streaming-page.js}
 * (d3), the same functions and layout as Spark's Streaming tab: the page holds empty {@code div}s
 * and one module script that registers every graph, then draws them when the DOM is ready.
 */
final class Charts {
  private final String moduleUrl;
  private final Map<Long, String> axisTimes = new TreeMap<>();
  private final Map<Long, String> tipTimes = new TreeMap<>();
  private final List<String> prepared = new ArrayList<>();
  private final List<String> statements = new ArrayList<>();
  private int variables;

  /** @param moduleUrl the URL of streaming-page.js (with the UI's base path) */
  Charts(String moduleUrl) {
    this.moduleUrl = moduleUrl;
  }

  /** Names a batch time for the axes (time of day) and for tooltips (the full time). */
  void time(long x, String axis, String tip) {
    axisTimes.put(x, axis);
    tipTimes.put(x, tip);
  }

  /**
   * Registers one series for a timeline and a histogram sharing its Y range; returns the HTML
   * of the two cells' contents: {@code [timeline div, histogram div]}.
   */
  String[] series(
      String id,
      long[] xs,
      double[] ys,
      long minX,
      long maxX,
      double maxY,
      String unit,
      Double batchInterval) {
    String data = "v" + (++variables);
    StringBuilder points = new StringBuilder("[");
    for (int i = 0; i < xs.length; i++) {
      if (i > 0) {
        points.append(',');
      }
      points.append("{\"x\":").append(xs[i]).append(",\"y\":").append(num(ys[i])).append('}');
    }
    points.append(']');
    String values = data + ".map(function(d) { return d.y; })";
    String line = batchInterval == null ? "" : ", " + num(batchInterval);
    prepared.add("var " + data + " = " + points + ";");
    prepared.add("registerTimeline(0, " + num(maxY) + ");");
    prepared.add("registerHistogram(" + values + ", 0, " + num(maxY) + ");");
    statements.add(
        String.format(
            Locale.ROOT,
            "drawTimeline('#%s-timeline', %s, %d, %d, 0, %s, %s%s);",
            id,
            data,
            minX,
            maxX,
            num(maxY),
            Html.js(unit),
            line));
    statements.add(
        String.format(
            Locale.ROOT,
            "drawHistogram('#%s-histogram', %s, 0, %s, %s%s);",
            id,
            values,
            num(maxY),
            Html.js(unit),
            line));
    return new String[] {
      "<div id=\"" + id + "-timeline\" class=\"graph\"></div>",
      "<div id=\"" + id + "-histogram\" class=\"graph\"></div>"
    };
  }

  /** The scripts that draw every registered series (put them after the divs). */
  String scripts() {
    // Spark's pages send a Content-Security-Policy that runs inline scripts only with the
    // request's nonce.
    String nonce = Html.esc(CspNonce.get());
    StringBuilder out = new StringBuilder("<script nonce=\"" + nonce + "\">\n");
    out.append("var timeFormat = {};\nvar timeTipStrings = {};\n");
    for (Map.Entry<Long, String> e : axisTimes.entrySet()) {
      out.append("timeFormat[").append(e.getKey()).append("] = ").append(Html.js(e.getValue()));
      out.append(";\n");
    }
    for (Map.Entry<Long, String> e : tipTimes.entrySet()) {
      out.append("timeTipStrings[").append(e.getKey()).append("] = ");
      out.append(Html.js(e.getValue())).append(";\n");
    }
    out.append("</script>\n<script type=\"module\" nonce=\"").append(nonce).append("\">\n");
    out.append("import { registerTimeline, drawTimeline, registerHistogram, drawHistogram } from ");
    out.append(Html.js(moduleUrl)).append(";\n$(document).ready(function() {\n");
    for (String s : prepared) {
      out.append("  ").append(s).append('\n');
    }
    for (String s : statements) {
      out.append("  ").append(s).append('\n');
    }
    return out.append("});\n</script>\n").toString();
  }

  private static String num(double value) {
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      return "0";
    }
    return value == Math.rint(value)
        ? Long.toString((long) value)
        : String.format(Locale.ROOT, "%.3f", value);
  }
}
