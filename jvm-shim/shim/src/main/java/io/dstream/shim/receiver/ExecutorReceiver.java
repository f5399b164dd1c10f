package io.dstream.shim.receiver;

import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Properties;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.VoidFunction;

/**
 * The dstream receiver on an executor (the paper's Sec. 4.1 receiver on a worker node): a
 * one-task Spark job whose task listens for clients, stores each block they send on {@code
 * replicas} executors through the executor's block manager, registers it with the driver and
 * only then acknowledges it.
 *
 * <p>The driver's Python ({@code dstream.receiver.executors}) calls {@link #run} from a thread of
 * its own, once per receiver address, and calls it again when it returns with an error (the
 * executor died: the receiver starts again on another one and listens on the same port). The
 * wire protocol with clients is {@code dstream.receiver.protocol}'s; the one with the driver is
 * {@code dstream.receiver.tracker}'s. A normal return means the driver stopped the receiver (it
 * closed the tracker connection).
 */
public final class ExecutorReceiver implements VoidFunction<Iterator<Integer>> {
  private static final long serialVersionUID = 1L;

  final byte[] secret;
  final byte[] token;
  final String trackerHost;
  final int trackerPort;
  final int index;
  final String host;
  final int port;
  final int streamId;
  final int replicas;
  final boolean asText;

  private ExecutorReceiver(Properties p) {
    this.secret = Hex.decode(required(p, "secret"));
    this.token = Hex.decode(required(p, "token"));
    this.trackerHost = required(p, "trackerHost");
    this.trackerPort = Integer.parseInt(required(p, "trackerPort"));
    this.index = Integer.parseInt(required(p, "index"));
    this.host = required(p, "host");
    this.port = Integer.parseInt(required(p, "port"));
    this.streamId = Integer.parseInt(required(p, "streamId"));
    this.replicas = Integer.parseInt(required(p, "replicas"));
    this.asText = Boolean.parseBoolean(required(p, "asText"));
  }

  private static String required(Properties p, String key) {
    String value = p.getProperty(key);
    if (value == null) {
      throw new IllegalArgumentException("receiver spec has no '" + key + "'");
    }
    return value;
  }

  /**
   * Runs receiver {@code spec} (a {@link Properties} text: secret, token, trackerHost,
   * trackerPort, index, host, port, streamId, replicas, asText) as a one-task job in job group
   * {@code group}; returns when the driver stops it, throws when the task failed for good.
   */
  public static void run(JavaSparkContext jsc, String group, String spec) throws IOException {
    Properties p = new Properties();
    p.load(new StringReader(spec));
    ExecutorReceiver receiver = new ExecutorReceiver(p);
    jsc.setJobGroup(
        group,
        "receiverStream " + receiver.streamId + ": receiver " + receiver.index + " on "
            + receiver.host + ":" + receiver.port,
        true);
    List<Integer> one = new ArrayList<>();
    one.add(receiver.index);
    jsc.parallelize(one, 1).foreachPartition(receiver);
  }

  @Override
  public void call(Iterator<Integer> ignored) throws Exception {
    new RunningReceiver(this).run();
  }
}
