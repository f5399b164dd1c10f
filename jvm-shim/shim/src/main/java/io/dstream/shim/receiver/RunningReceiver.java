package io.dstream.shim.receiver;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.storage.StreamBlockId;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * One run of an {@link ExecutorReceiver} inside its task: the listening socket, a thread per
 * client connection, and the connection to the driver (the tracker) that registers each stored
 * block and passes the clients' commits back.
 *
 * <pre>
 * client --"B" seq--> handshake ok --> put on `replicas` executors (StreamBlockId) --> held by
 *   that many?  no: remove, put again (6 attempts)  yes: "S" to the driver --> its "R":
 *   new/known: "A" seq   committed: "A" and "C" seq   refused: close (the client sends again)
 * driver --"C" client seq--> the client's current connection
 * </pre>
 */
final class RunningReceiver {
  private static final byte[] MAGIC = "DSR1".getBytes(US_ASCII);
  private static final byte[] TRACKER_MAGIC = "DST1".getBytes(US_ASCII);
  private static final byte[] CLIENT_LABEL = "dstream-receiver/1 client".getBytes(US_ASCII);
  private static final byte[] SERVER_LABEL = "dstream-receiver/1 server".getBytes(US_ASCII);
  private static final int CHALLENGE_BYTES = 32;
  private static final int CLIENT_ID_BYTES = 16;
  private static final int MAC_BYTES = 32;
  private static final long MAX_BLOCK_BYTES = 64L * 1024 * 1024;
  private static final int MAX_RECORDS = 10_000_000;
  private static final int STORE_ATTEMPTS = 6;
  // Blocks of one connection being stored at once.
  private static final int STORES_IN_FLIGHT = 8;
  private static final int HANDSHAKE_TIMEOUT_MS = 10_000;
  private static final long BIND_WAIT_MS = 30_000;

  // The driver's answers to a registration (dstream.receiver.tracker).
  static final int NEW = 0;
  static final int KNOWN = 1;
  static final int COMMITTED = 2;
  static final int REFUSED = 3;
  // What an "E" message reports.
  static final int ERROR_REFUSED_CLIENT = 0;
  static final int ERROR_CONNECTION = 1;

  private final ExecutorReceiver spec;
  private final BlockManager blockManager;
  private final String executorId;
  private final SecureRandom random = new SecureRandom();
  private final AtomicLong nextBlock;
  private final Map<Long, CompletableFuture<Integer>> replies = new ConcurrentHashMap<>();
  private final Map<String, ClientConnection> clients = new ConcurrentHashMap<>();
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final ExecutorService stores =
      Executors.newCachedThreadPool(
          task -> {
            Thread thread = new Thread(task, "dstream-receiver-store");
            thread.setDaemon(true);
            return thread;
          });
  private volatile boolean stopping;
  private ServerSocket server;
  private Socket tracker;
  private DataOutputStream toDriver;

  RunningReceiver(ExecutorReceiver spec) {
    this.spec = spec;
    SparkEnv env = SparkEnv.get();
    this.blockManager = env.blockManager();
    this.executorId = env.executorId();
    // Block ids unique within the application: the task attempt (unique per SparkContext) in
    // the high bits.
    TaskContext task = TaskContext.get();
    long attempt = task == null ? random.nextInt(1 << 20) : task.taskAttemptId();
    this.nextBlock = new AtomicLong(attempt << 32);
  }

  void run() throws IOException, InterruptedException {
    try {
      server = bind();
      connectToDriver();
      Thread reader = new Thread(this::readDriver, "dstream-receiver-tracker-" + spec.index);
      reader.setDaemon(true);
      reader.start();
      server.setSoTimeout(500);
      TaskContext task = TaskContext.get();
      while (!stopping) {
        if (Thread.currentThread().isInterrupted() || (task != null && task.isInterrupted())) {
          return; // the job was cancelled
        }
        Socket socket;
        try {
          socket = server.accept();
        } catch (SocketTimeoutException e) {
          continue;
        } catch (IOException e) {
          if (stopping) {
            return;
          }
          throw e;
        }
        Thread thread = new Thread(() -> serve(socket), "dstream-receiver-connection");
        thread.setDaemon(true);
        thread.start();
      }
    } finally {
      stop();
    }
  }

  private ServerSocket bind() throws IOException, InterruptedException {
    long deadline = System.currentTimeMillis() + BIND_WAIT_MS;
    while (true) {
      ServerSocket socket = new ServerSocket();
      socket.setReuseAddress(true);
      try {
        socket.bind(new InetSocketAddress(spec.host, spec.port));
        return socket;
      } catch (BindException e) {
        socket.close();
        // The receiver's previous run on this host may still be closing its socket.
        if (System.currentTimeMillis() > deadline) {
          throw new BindException(
              "receiver " + spec.index + " cannot listen on " + spec.host + ":" + spec.port
                  + " on executor " + executorId + " (" + e.getMessage() + "); another program"
                  + " holds that port on this host: pick another port");
        }
        Thread.sleep(250);
      }
    }
  }

  private void connectToDriver() throws IOException {
    tracker = new Socket();
    tracker.setTcpNoDelay(true);
    tracker.connect(new InetSocketAddress(spec.trackerHost, spec.trackerPort), 30_000);
    toDriver = new DataOutputStream(new BufferedOutputStream(tracker.getOutputStream()));
    String advertised =
        server.getInetAddress().isAnyLocalAddress()
            ? blockManager.blockManagerId().host()
            : server.getInetAddress().getHostAddress();
    synchronized (toDriver) {
      toDriver.write(TRACKER_MAGIC);
      toDriver.write(spec.token);
      toDriver.writeInt(spec.index);
      toDriver.writeUTF(executorId);
      toDriver.writeUTF(advertised);
      toDriver.writeInt(server.getLocalPort());
      toDriver.flush();
    }
  }

  /** The driver's answers and commits, until it closes the connection (stop). */
  private void readDriver() {
    try {
      DataInputStream in = new DataInputStream(new BufferedInputStream(tracker.getInputStream()));
      while (true) {
        int kind = in.read();
        if (kind < 0) {
          return;
        }
        if (kind == 'R') {
          long request = in.readLong();
          int status = in.readUnsignedByte();
          CompletableFuture<Integer> reply = replies.remove(request);
          if (reply != null) {
            reply.complete(status);
          }
        } else if (kind == 'C') {
          byte[] client = new byte[CLIENT_ID_BYTES];
          in.readFully(client);
          long seq = in.readLong();
          ClientConnection conn = clients.get(Hex.encode(client));
          if (conn != null) {
            conn.ack('C', seq);
          }
        } else {
          throw new IOException("unexpected message " + kind + " from the driver");
        }
      }
    } catch (IOException e) {
      // The driver went away, or stopped the receiver: both end this run.
    } finally {
      stop();
    }
  }

  private void serve(Socket socket) {
    open.add(socket);
    String peer = String.valueOf(socket.getRemoteSocketAddress());
    String client = null;
    ClientConnection conn = null;
    Semaphore room = new Semaphore(STORES_IN_FLIGHT);
    AtomicReference<Exception> failed = new AtomicReference<>();
    try (socket) {
      socket.setSoTimeout(HANDSHAKE_TIMEOUT_MS);
      socket.setTcpNoDelay(true);
      DataInputStream in =
          new DataInputStream(new BufferedInputStream(socket.getInputStream(), 1 << 16));
      conn = new ClientConnection(socket.getOutputStream());
      byte[] clientId = handshake(in, conn, peer);
      if (clientId == null) {
        return;
      }
      socket.setSoTimeout(0);
      client = Hex.encode(clientId);
      clients.put(client, conn);
      while (!stopping) {
        int kind = in.read();
        if (kind < 0) {
          return;
        }
        if (kind != 'B') {
          throw new IOException("expected a block frame 'B', got " + kind);
        }
        long seq = in.readLong();
        int n = in.readInt();
        if (n < 0 || n > MAX_RECORDS) {
          throw new IOException("block " + seq + " announces " + n + " records");
        }
        // The block is stored as the frame it came in (one byte array: no object per
        // record to serialize); Python splits it into records when an interval reads it.
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(1 << 16);
        DataOutputStream frame = new DataOutputStream(bytes);
        frame.write('B');
        frame.writeLong(seq);
        frame.writeInt(n);
        byte[] buffer = new byte[1 << 16];
        long total = 0;
        for (int i = 0; i < n; i++) {
          int size = in.readInt();
          total += size;
          if (size < 0 || total > MAX_BLOCK_BYTES) {
            throw new IOException(
                "block " + seq + " is larger than " + MAX_BLOCK_BYTES + " bytes");
          }
          frame.writeInt(size);
          for (int left = size; left > 0; ) {
            int got = in.read(buffer, 0, Math.min(left, buffer.length));
            if (got < 0) {
              throw new EOFException("connection closed inside block " + seq);
            }
            frame.write(buffer, 0, got);
            left -= got;
          }
        }
        byte[] block = bytes.toByteArray();
        // Stored while the next blocks are read: a put waits mostly on the peer's copy.
        room.acquire();
        ClientConnection acks = conn;
        stores.execute(
            () -> {
              try {
                take(acks, clientId, seq, n, block);
              } catch (IOException | RuntimeException | InterruptedException e) {
                failed.compareAndSet(null, e);
                closeQuietly(socket); // the client connects again and sends what it keeps
              } finally {
                room.release();
              }
            });
      }
    } catch (IOException | RuntimeException | GeneralSecurityException e) {
      if (!stopping) {
        Exception cause = failed.get() != null ? failed.get() : e;
        report(
            ERROR_CONNECTION,
            peer,
            "connection from client " + client + " at " + peer + " failed on executor "
                + executorId + ": " + cause);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      open.remove(socket);
      if (client != null) {
        clients.remove(client, conn);
      }
    }
  }

  private byte[] handshake(DataInputStream in, ClientConnection conn, String peer)
      throws IOException, GeneralSecurityException {
    byte[] challengeR = new byte[CHALLENGE_BYTES];
    random.nextBytes(challengeR);
    conn.write(MAGIC, challengeR);
    byte[] answer = new byte[MAC_BYTES + CHALLENGE_BYTES + CLIENT_ID_BYTES];
    in.readFully(answer);
    byte[] mac = slice(answer, 0, MAC_BYTES);
    byte[] challengeC = slice(answer, MAC_BYTES, MAC_BYTES + CHALLENGE_BYTES);
    byte[] clientId = slice(answer, MAC_BYTES + CHALLENGE_BYTES, answer.length);
    if (!MessageDigest.isEqual(mac, hmac(CLIENT_LABEL, challengeR, challengeC, clientId))) {
      report(
          ERROR_REFUSED_CLIENT,
          peer,
          "client " + Hex.encode(clientId)
              + " answered the challenge with a wrong HMAC (another secret)");
      byte[] reason =
          "authentication failed: the client does not know the receiver's secret".getBytes(UTF_8);
      byte[] head = ByteBuffer.allocate(3).put((byte) 0).putShort((short) reason.length).array();
      conn.write(head, reason);
      return null;
    }
    conn.write(new byte[] {1}, hmac(SERVER_LABEL, challengeC, challengeR, clientId));
    return clientId;
  }

  private byte[] hmac(byte[]... parts) throws GeneralSecurityException {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(spec.secret, "HmacSHA256"));
    for (byte[] part : parts) {
      mac.update(part);
    }
    return mac.doFinal();
  }

  private static byte[] slice(byte[] bytes, int from, int to) {
    byte[] out = new byte[to - from];
    System.arraycopy(bytes, from, out, 0, out.length);
    return out;
  }

  /** Store a block, register it with the driver, then acknowledge it to the client. */
  private void take(ClientConnection conn, byte[] clientId, long seq, int count, byte[] block)
      throws IOException, InterruptedException {
    List<String> held = new ArrayList<>();
    StreamBlockId id = store(clientId, seq, block, held);
    int status = register(clientId, seq, count, id, held);
    if (status != NEW) {
      blockManager.master().removeBlock(id); // the stream has it already
    }
    if (status == REFUSED) {
      throw new IOException("the driver stopped taking blocks");
    }
    conn.ack('A', seq);
    if (status == COMMITTED) {
      conn.ack('C', seq);
    }
  }

  /** Put {@code block} on {@code spec.replicas} executors; {@code held} gets their ids. */
  private StreamBlockId store(byte[] clientId, long seq, byte[] block, List<String> held)
      throws IOException, InterruptedException {
    StorageLevel level = StorageLevel.apply(true, true, false, false, spec.replicas);
    ClassTag<Object> tag = ClassTag$.MODULE$.AnyRef();
    for (int attempt = 1; ; attempt++) {
      StreamBlockId id = new StreamBlockId(spec.streamId, nextBlock.incrementAndGet());
      boolean put =
          blockManager.putIterator(
              id, CollectionConverters.asScala(List.<Object>of(block).iterator()), level, true, tag);
      held.clear();
      if (put) {
        held.addAll(holders(id));
        if (held.size() >= spec.replicas) {
          return id;
        }
        blockManager.master().removeBlock(id);
      }
      if (attempt == STORE_ATTEMPTS || stopping) {
        throw new IOException(
            "block " + seq + " of client " + Hex.encode(clientId) + " is on " + held.size()
                + " executor(s) " + held + ", not " + spec.replicas + ", after " + attempt
                + " attempts");
      }
      Thread.sleep(Math.min(500L << attempt, 8_000L));
    }
  }

  /** The executors holding a copy of {@code id}, as the block manager master knows now. */
  private List<String> holders(StreamBlockId id) {
    Set<String> executors = new TreeSet<>();
    for (BlockManagerId holder : CollectionConverters.asJava(blockManager.master().getLocations(id))) {
      executors.add(holder.executorId());
    }
    return new ArrayList<>(executors);
  }

  /** "S": the driver's answer (NEW, KNOWN, COMMITTED or REFUSED); it may wait (backpressure). */
  private int register(byte[] clientId, long seq, int count, StreamBlockId id, List<String> held)
      throws InterruptedException {
    CompletableFuture<Integer> reply = new CompletableFuture<>();
    long request = id.uniqueId();
    replies.put(request, reply);
    try {
      synchronized (toDriver) {
        toDriver.write('S');
        toDriver.writeLong(request);
        toDriver.write(clientId);
        toDriver.writeLong(seq);
        toDriver.writeInt(count);
        toDriver.writeShort(held.size());
        for (String executor : held) {
          toDriver.writeUTF(executor);
        }
        toDriver.flush();
      }
    } catch (IOException e) {
      replies.remove(request);
      return REFUSED;
    }
    if (stopping) {
      reply.complete(REFUSED);
    }
    try {
      return reply.get();
    } catch (ExecutionException e) {
      return REFUSED;
    }
  }

  private void report(int kind, String peer, String message) {
    DataOutputStream out = toDriver;
    if (out == null) {
      return;
    }
    String text = message.length() > 8_000 ? message.substring(0, 8_000) : message;
    try {
      synchronized (out) {
        out.write('E');
        out.write(kind);
        out.writeUTF(peer);
        out.writeUTF(text);
        out.flush();
      }
    } catch (IOException e) {
      // The driver is gone; the run ends.
    }
  }

  private synchronized void stop() {
    stopping = true;
    closeQuietly(server);
    closeQuietly(tracker);
    for (Socket socket : open) {
      closeQuietly(socket);
    }
    for (CompletableFuture<Integer> reply : replies.values()) {
      reply.complete(REFUSED);
    }
    stores.shutdownNow();
  }

  private static void closeQuietly(AutoCloseable closeable) {
    if (closeable == null) {
      return;
    }
    try {
      closeable.close();
    } catch (Exception e) {
      // closing anyway
    }
  }

  /** A client's connection: acknowledgements written whole, one at a time. */
  private static final class ClientConnection {
    private final OutputStream out;

    ClientConnection(OutputStream out) {
      this.out = out;
    }

    synchronized void write(byte[]... parts) throws IOException {
      for (byte[] part : parts) {
        out.write(part);
      }
      out.flush();
    }

    void ack(char kind, long seq) {
      try {
        write(ByteBuffer.allocate(9).put((byte) kind).putLong(seq).array());
      } catch (IOException e) {
        // the client connects again and sends what it keeps
      }
    }
  }
}
