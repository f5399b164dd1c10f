package io.dstream.shim.ui;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Locale;

/** Small helpers to write the pages' HTML from the pushed documents. */
final class Html {
  private Html() {}

  /** {@code text} escaped for HTML text and attribute values. */
  static String esc(String text) {
    if (text == null) {
      return "";
    }
    StringBuilder out = new StringBuilder(text.length() + 16);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '&' -> out.append("&amp;");
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  /** {@code text} as a JavaScript string literal that is safe inside a script element. */
  static String js(String text) {
    try {
      return ContextStatus.JSON.writeValueAsString(text).replace("</", "<\\/");
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The value as page text (escaped); "-" when it is missing or null. */
  static String text(JsonNode value) {
    if (value == null || value.isMissingNode() || value.isNull()) {
      return "-";
    }
    return esc(value.isTextual() ? value.asText() : value.toString());
  }

  /** A duration in milliseconds as "310 ms"; "-" when unknown. */
  static String ms(JsonNode value) {
    return value != null && value.isNumber() ? value.asLong() + " ms" : "-";
  }

  /** A count with thousands separators ("12,345"); "-" when unknown. */
  static String count(JsonNode value) {
    return value != null && value.isNumber()
        ? String.format(Locale.ROOT, "%,d", value.asLong())
        : "-";
  }

  /** A rate as "2,000.0"; "-" when unknown. */
  static String rate(JsonNode value) {
    return value != null && value.isNumber()
        ? String.format(Locale.ROOT, "%,.1f", value.asDouble())
        : "-";
  }

  /** Bytes as "1.5 MiB"; "-" when unknown. */
  static String bytes(JsonNode value) {
    if (value == null || !value.isNumber()) {
      return "-";
    }
    double b = value.asDouble();
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (b >= 1024 && unit < units.length - 1) {
      b /= 1024;
      unit++;
    }
    return unit == 0
        ? value.asLong() + " B"
        : String.format(Locale.ROOT, "%.1f %s", b, units[unit]);
  }

  /** The first line of {@code text}, at most {@code max} characters. */
  static String firstLine(String text, int max) {
    if (text == null) {
      return "";
    }
    String line = text.strip();
    int nl = line.indexOf('\n');
    if (nl >= 0) {
      line = line.substring(0, nl);
    }
    return line.length() <= max ? line : line.substring(0, max - 3) + "...";
  }
}
