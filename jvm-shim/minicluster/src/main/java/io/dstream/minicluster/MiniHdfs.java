package io.dstream.minicluster;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSCluster.DataNodeProperties;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.namenode.FSNamesystem;

/**
 * A real HDFS (one NameNode, N DataNodes, WebHDFS) in one JVM, driven over stdin/stdout.
 *
 * <p>stdout carries exactly one JSON object per line: a {@code ready} event once the cluster is
 * up, then one answer per command read from stdin. Everything else (Hadoop's logging, stray
 * {@code System.out} prints) goes to stderr.
 *
 * <p>Commands: {@code stop-datanode I}, {@code restart-datanode I}, {@code status},
 * {@code shutdown}. DataNode indices are the ones the DataNodes were started with (0..N-1) and
 * stay the same across stop/restart, unlike MiniDFSCluster's own list, which shifts.
 *
 * <p>The cluster stops, and the JVM exits 0, on {@code shutdown}, on stdin EOF (so it never
 * outlives the process that launched it) and on SIGTERM/SIGINT/SIGHUP. A temp base dir is
 * deleted then; a {@code --base-dir} is kept, and the next start on it reuses its data.
 */
public final class MiniHdfs {
  private static final String USAGE =
      "usage: MiniHdfs [--base-dir DIR [--delete-base-dir]] [--datanodes N] [--replication R]"
          + " [--nn-port P] [--http-port P]";
  private static final String COMMANDS =
      "stop-datanode I, restart-datanode I, status, shutdown";
  private static final long RESTART_TIMEOUT_MS = 60_000;

  private final PrintStream out;
  private final MiniDFSCluster cluster;
  private final File baseDir;
  private final boolean deleteBaseDir;
  /** Transfer address (host:port) of DataNode i as first started; kept across restarts. */
  private final String[] names;
  /** Running DataNode i, or null while stopped. */
  private final DataNode[] running;
  /** What restartDataNode needs to bring DataNode i back, while it is stopped. */
  private final DataNodeProperties[] stopped;
  private boolean closed;

  private MiniHdfs(PrintStream out, MiniDFSCluster cluster, File baseDir, boolean deleteBaseDir) {
    this.out = out;
    this.cluster = cluster;
    this.baseDir = baseDir;
    this.deleteBaseDir = deleteBaseDir;
    List<DataNode> dns = cluster.getDataNodes();
    this.names = new String[dns.size()];
    this.running = new DataNode[dns.size()];
    this.stopped = new DataNodeProperties[dns.size()];
    for (int i = 0; i < dns.size(); i++) {
      running[i] = dns.get(i);
      names[i] = dns.get(i).getDatanodeId().getXferAddr();
    }
  }

  public static void main(String[] args) throws Exception {
    // Keep the real stdout for the protocol; anything else that prints to System.out
    // (Hadoop has a few System.out.println calls) lands on stderr instead.
    PrintStream out =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);

    String baseDirArg = null;
    boolean deleteBaseDirArg = false;
    int datanodes = 2;
    int replication = 2;
    int nnPort = 0; // 0: a free port chosen by the OS
    int httpPort = 0;
    try {
      for (int i = 0; i < args.length; i++) {
        String opt = args[i];
        if (opt.equals("-h") || opt.equals("--help")) {
          System.err.println(USAGE);
          System.exit(0);
        }
        if (opt.equals("--delete-base-dir")) {
          deleteBaseDirArg = true;
          continue;
        }
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("missing value for " + opt);
        }
        String val = args[++i];
        switch (opt) {
          case "--base-dir" -> baseDirArg = val;
          case "--datanodes" -> datanodes = Integer.parseInt(val);
          case "--replication" -> replication = Integer.parseInt(val);
          case "--nn-port" -> nnPort = Integer.parseInt(val);
          case "--http-port" -> httpPort = Integer.parseInt(val);
          default -> throw new IllegalArgumentException("unknown option " + opt);
        }
      }
      if (datanodes < 1 || replication < 1) {
        throw new IllegalArgumentException("--datanodes and --replication must be >= 1");
      }
    } catch (IllegalArgumentException e) {
      System.err.println("MiniHdfs: " + e.getMessage() + "\n" + USAGE);
      System.exit(2);
    }

    // A --base-dir is the user's: its data is kept at exit and reused by the next start,
    // unless --delete-base-dir (the Python launcher's temp dirs: gone even if it was killed).
    // Without one we make a temp dir and delete it at exit.
    File baseDir;
    boolean deleteBaseDir = baseDirArg == null || deleteBaseDirArg;
    if (baseDirArg == null) {
      baseDir = Files.createTempDirectory("dstream-minihdfs-").toFile();
    } else {
      baseDir = new File(baseDirArg).getAbsoluteFile();
      Files.createDirectories(baseDir.toPath());
    }
    // MiniDFSCluster keeps the NameNode's metadata in base/name-*/ and the blocks in base/data/.
    // Formatting wipes both, so only format a base dir that holds no NameNode yet.
    boolean format = !hasNameNodeDirs(baseDir);

    long t0 = System.nanoTime();
    MiniDFSCluster cluster;
    try {
      // MiniDFSCluster binds the NameNode (RPC and HTTP) and the DataNodes to 127.0.0.1.
      cluster =
          new MiniDFSCluster.Builder(configuration(baseDir, replication), baseDir)
              .numDataNodes(datanodes)
              .nameNodePort(nnPort)
              .nameNodeHttpPort(httpPort)
              .format(format)
              .build();
      cluster.waitActive();
    } catch (Throwable t) { // incl. NoClassDefFoundError from an incomplete classpath
      t.printStackTrace();
      if (deleteBaseDir) {
        deleteTree(baseDir);
      }
      // Exit even though daemons that did start may still hold non-daemon threads.
      System.exit(1);
      return;
    }
    long startupMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

    MiniHdfs hdfs = new MiniHdfs(out, cluster, baseDir, deleteBaseDir);
    // Every way out (shutdown command, stdin EOF, SIGTERM/SIGINT/SIGHUP) stops the cluster on an
    // ordinary thread and then exits 0. Not from a shutdown hook: a DataNode's shutdown removes
    // Hadoop shutdown hooks of its own, which throws once the JVM is exiting, leaving the
    // DataNodes half-stopped and the temp dir behind. The handler also makes the exit status
    // 0 rather than the 143/130 that a JVM killed by a signal reports.
    for (String sig : new String[] {"TERM", "INT", "HUP"}) {
      sun.misc.Signal.handle(new sun.misc.Signal(sig), s -> hdfs.exit());
    }
    // Last resort for any other exit (an uncaught error, System.exit elsewhere): try anyway.
    Runtime.getRuntime().addShutdownHook(new Thread(hdfs::close, "minihdfs-close"));

    hdfs.emit(obj(
        "event", "ready",
        "hdfs", "hdfs://127.0.0.1:" + cluster.getNameNodePort(),
        "webhdfs", "http://127.0.0.1:" + cluster.getNameNode().getHttpAddress().getPort(),
        "datanodes", datanodes,
        "replication", replication,
        "base_dir", baseDir.getPath(),
        "formatted", format,
        "startup_ms", startupMs));

    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (!line.isBlank() && !hdfs.handle(line.trim())) {
        break;
      }
    }
    hdfs.exit(); // shutdown command, or stdin EOF: whoever launched us has gone
  }

  private void exit() {
    close();
    System.exit(0);
  }

  private static Configuration configuration(File baseDir, int replication) {
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, baseDir.getPath());
    conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, replication);
    conf.setBoolean("dfs.webhdfs.enabled", true); // HdfsClientConfigKeys; on by default in 3.x
    // Any local user may write (tests run as root, demos as whoever).
    conf.setBoolean(DFSConfigKeys.DFS_PERMISSIONS_ENABLED_KEY, false);
    // Notice a stopped ("crashed") DataNode quickly. The NameNode declares a DataNode dead after
    // 2 * recheck-interval + 10 * heartbeat-interval without a heartbeat: 2*0.5 s + 10*1 s = 11 s
    // here, instead of 10.5 minutes with the defaults (3 s heartbeats, 5 min recheck). Its
    // replicas leave the block locations at the next scan of the NameNode's heartbeat monitor,
    // which runs every 5 s (hard-coded): so 11 to 16 s after the DataNode stopped.
    conf.setLong(DFSConfigKeys.DFS_HEARTBEAT_INTERVAL_KEY, 1); // seconds; 1 is the minimum
    conf.setInt(DFSConfigKeys.DFS_NAMENODE_HEARTBEAT_RECHECK_INTERVAL_KEY, 500); // ms
    // Well before that, after 3 missed heartbeats (the smallest allowed), mark it stale and
    // send readers (WebHDFS redirects, DFSClient block locations) to the live replicas first.
    conf.setLong(DFSConfigKeys.DFS_NAMENODE_STALE_DATANODE_INTERVAL_KEY, 3_000); // ms
    conf.setBoolean(DFSConfigKeys.DFS_NAMENODE_AVOID_STALE_DATANODE_FOR_READ_KEY, true);
    return conf;
  }

  /** rm -rf, in plain Java: it must work even when Hadoop's classes failed to load. */
  private static void deleteTree(File dir) {
    try (Stream<Path> paths = Files.walk(dir.toPath())) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      System.err.println("MiniHdfs: could not delete " + dir + ": " + e);
    }
  }

  private static boolean hasNameNodeDirs(File baseDir) {
    File[] names = baseDir.listFiles((dir, name) -> name.startsWith("name-"));
    return names != null && names.length > 0;
  }

  /** Handles one command line; returns false once the cluster has been shut down. */
  private synchronized boolean handle(String line) {
    String[] parts = line.split("\\s+");
    String cmd = parts[0];
    try {
      switch (cmd) {
        case "status" -> emit(status("status"));
        case "stop-datanode" -> {
          int i = index(parts);
          if (running[i] == null) {
            throw new IllegalStateException("datanode " + i + " is already stopped");
          }
          // Like a crash as far as the NameNode is concerned: the DataNode just stops sending
          // heartbeats, and the NameNode finds out only when they time out (see above).
          stopped[i] = cluster.stopDataNode(names[i]);
          running[i] = null;
          emit(status("datanode-stopped", "index", i));
        }
        case "restart-datanode" -> {
          int i = index(parts);
          if (stopped[i] == null) {
            throw new IllegalStateException("datanode " + i + " is running");
          }
          // keepPort: same transfer address, so the NameNode sees the same node come back.
          cluster.restartDataNode(stopped[i], true);
          stopped[i] = null;
          List<DataNode> dns = cluster.getDataNodes();
          running[i] = dns.get(dns.size() - 1); // restartDataNode appends it
          waitLive(running[i], names[i]);
          emit(status("datanode-restarted", "index", i));
        }
        case "shutdown" -> {
          close();
          emit(obj("event", "stopped"));
          return false;
        }
        default -> throw new IllegalArgumentException(
            "unknown command '" + cmd + "'; valid commands: " + COMMANDS);
      }
    } catch (Exception e) {
      emit(obj("event", "error", "command", cmd, "message", String.valueOf(e.getMessage())));
    }
    return true;
  }

  private int index(String[] parts) {
    if (parts.length != 2) {
      throw new IllegalArgumentException(parts[0] + " takes one argument, a datanode index");
    }
    int i = Integer.parseInt(parts[1]);
    if (i < 0 || i >= names.length) {
      throw new IllegalArgumentException(
          "datanode index " + i + " out of range 0.." + (names.length - 1));
    }
    return i;
  }

  /** Waits until the restarted DataNode has registered and the NameNode lists it as live. */
  private void waitLive(DataNode dn, String name) throws IOException, InterruptedException {
    long deadline = System.currentTimeMillis() + RESTART_TIMEOUT_MS;
    while (System.currentTimeMillis() < deadline) {
      if (dn.isDatanodeFullyStarted()) {
        DatanodeInfo[] live = cluster.getNameNodeRpc().getDatanodeReport(DatanodeReportType.LIVE);
        for (DatanodeInfo info : live) {
          if (info.getXferAddr().equals(name)) {
            return;
          }
        }
      }
      Thread.sleep(100);
    }
    throw new IOException("datanode " + name + " not live after " + RESTART_TIMEOUT_MS + " ms");
  }

  private Map<String, Object> status(String event, Object... extra) {
    FSNamesystem ns = cluster.getNamesystem();
    Map<String, Object> m = obj("event", event);
    m.putAll(obj(extra));
    // As the NameNode sees them: a stopped DataNode stays "live" until its heartbeats time out.
    m.put("live_datanodes", ns.getNumLiveDataNodes());
    m.put("dead_datanodes", ns.getNumDeadDataNodes());
    m.put("stale_datanodes", ns.getNumStaleDataNodes());
    m.put("under_replicated_blocks", ns.getLowRedundancyBlocks()); // Hadoop 3 name
    m.put("missing_blocks", ns.getMissingBlocksCount());
    List<Object> dns = new ArrayList<>();
    for (int i = 0; i < names.length; i++) {
      dns.add(obj("index", i, "running", running[i] != null, "addr", names[i]));
    }
    m.put("datanodes", dns);
    return m;
  }

  /** Stops the cluster (idempotent); deletes the base dir only if we created it. */
  private synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      // Not cluster.shutdown(): whatever its argument, it deletes the base dir, at once or
      // (false) through File.deleteOnExit, which cannot be undone and would wipe a --base-dir.
      cluster.shutdownDataNodes();
      cluster.shutdownNameNodes();
    } catch (RuntimeException e) {
      e.printStackTrace(); // to stderr; still clean up below
    } finally {
      if (deleteBaseDir) {
        deleteTree(baseDir);
      }
    }
  }

  private synchronized void emit(Map<String, ?> obj) {
    out.println(toJson(obj));
    out.flush();
  }

  /** An insertion-ordered map from alternating keys and values. */
  private static Map<String, Object> obj(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int k = 0; k + 1 < kv.length; k += 2) {
      m.put((String) kv[k], kv[k + 1]);
    }
    return m;
  }

  // A minimal JSON writer: maps, lists, strings, numbers, booleans, null.
  private static String toJson(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Number || v instanceof Boolean) {
      return v.toString();
    }
    if (v instanceof Map<?, ?> m) {
      StringBuilder sb = new StringBuilder("{");
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (sb.length() > 1) {
          sb.append(',');
        }
        sb.append(toJson(String.valueOf(e.getKey()))).append(':').append(toJson(e.getValue()));
      }
      return sb.append('}').toString();
    }
    if (v instanceof List<?> l) {
      StringBuilder sb = new StringBuilder("[");
      for (Object o : l) {
        if (sb.length() > 1) {
          sb.append(',');
        }
        sb.append(toJson(o));
      }
      return sb.append(']').toString();
    }
    StringBuilder sb = new StringBuilder("\"");
    for (char c : v.toString().toCharArray()) {
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }
}
