package io.dstream.shim;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A bounded, lock-free FIFO of encoded event lines.
 *
 * <p>One producer (Spark's listener-bus thread) and any number of consumers (Py4J threads calling
 * {@link #drain(int)}). When the buffer is full the <em>oldest</em> line is dropped and counted,
 * so a driver that stops polling loses history, never the most recent events, and the listener
 * thread never blocks. The size counter is maintained next to the queue (a
 * {@link ConcurrentLinkedQueue#size()} call is O(n)); it can be off by one or two for an instant
 * while an offer and a poll race, which only makes the bound slightly soft.
 */
final class EventBuffer {
  private final ConcurrentLinkedQueue<String> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger size = new AtomicInteger();
  private final AtomicLong dropped = new AtomicLong();
  private final int capacity;

  EventBuffer(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be >= 1, got " + capacity);
    }
    this.capacity = capacity;
  }

  void add(String line) {
    queue.offer(line);
    int n = size.incrementAndGet();
    while (n > capacity) {
      if (queue.poll() == null) {
        break; // a consumer emptied the queue concurrently
      }
      dropped.incrementAndGet();
      n = size.decrementAndGet();
    }
  }

  /** Removes up to {@code max} lines and returns them newline-terminated, oldest first. */
  String drain(int max) {
    if (max <= 0) {
      return "";
    }
    StringBuilder out = new StringBuilder(Math.min(max, 4096) * 96);
    for (int i = 0; i < max; i++) {
      String line = queue.poll();
      if (line == null) {
        break;
      }
      size.decrementAndGet();
      out.append(line).append('\n');
    }
    return out.toString();
  }

  int pending() {
    return Math.max(0, size.get());
  }

  long dropped() {
    return dropped.get();
  }

  int capacity() {
    return capacity;
  }
}
