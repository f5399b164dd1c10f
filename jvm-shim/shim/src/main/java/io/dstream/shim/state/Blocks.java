package io.dstream.shim.state;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkEnv;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.BlockManagerMaster;
import org.apache.spark.storage.BlockStatus;
import org.apache.spark.storage.RDDBlockId;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What the block manager master knows of a cached RDD's partitions, asked from the driver:
 * which executors hold each block (none: lost with its executor), and how large each is.
 */
public final class Blocks {
  private Blocks() {}

  private static BlockManagerMaster master() {
    return SparkEnv.get().blockManager().master();
  }

  /** Who holds each of the {@code count} blocks of RDD {@code source}: one call to the master. */
  private static List<scala.collection.immutable.Seq<BlockManagerId>> locations(
      int source, int count) {
    return CollectionConverters.asJava(master().getLocations(StateBlocks.ids(source, count)));
  }

  /** The task locations of each of the {@code count} blocks of RDD {@code source}. */
  static List<List<String>> holders(int source, int count) {
    List<List<String>> out = new ArrayList<>();
    for (scala.collection.immutable.Seq<BlockManagerId> ids : locations(source, count)) {
      out.add(StateBlocks.asLocations(ids));
    }
    return out;
  }

  /**
   * Called from Python: the executors holding each block of RDD {@code source}, their ids
   * space-separated, the blocks ";"-separated ("" for a lost block). One call to the master.
   */
  public static String executors(int source, int count) {
    List<String> out = new ArrayList<>();
    for (scala.collection.immutable.Seq<BlockManagerId> ids : locations(source, count)) {
      List<String> one = new ArrayList<>();
      for (BlockManagerId id : CollectionConverters.asJava(ids)) {
        one.add(id.executorId());
      }
      out.add(String.join(" ", one));
    }
    return String.join(";", out);
  }

  /**
   * Called from Python: the size in memory of each block of RDD {@code source}, "b0,b1,..." (0:
   * not cached anywhere). One call to the master per block.
   */
  public static String sizes(int source, int count) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < count; i++) {
      long size = 0;
      for (BlockStatus status :
          CollectionConverters.asJava(master().getBlockStatus(new RDDBlockId(source, i), false))
              .values()) {
        size = Math.max(size, status.memSize() + status.diskSize());
      }
      if (i > 0) {
        out.append(',');
      }
      out.append(size);
    }
    return out.toString();
  }

  /**
   * Called from Python (tests and benchmarks): forget block {@code partition} of RDD {@code
   * source} everywhere, as the death of the executors holding it would.
   */
  public static void drop(int source, int partition) {
    master().removeBlock(new RDDBlockId(source, partition));
  }
}
