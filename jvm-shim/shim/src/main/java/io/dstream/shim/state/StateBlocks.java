package io.dstream.shim.state;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.Partition;
import org.apache.spark.Partitioner;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.BlockResult;
import org.apache.spark.storage.RDDBlockId;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The cached partitions of another RDD, read from the block managers that hold them, with no
 * dependency on that RDD: Spark's scheduler never walks its lineage, so a partition whose
 * block was lost with its executor is not recomputed. Partition {@code i} yields the cached
 * block {@code (source, i)} (local or fetched from the executor that holds it), or, when no
 * executor holds it any more (or {@code i} is in {@code lost}), the single frame {@code
 * marker}: a pickled batch the Python task reading this RDD recognises and replaces with what
 * the mode it runs under says (a checkpoint, a backup copy, nothing).
 *
 * <p>The RDD declares the source's partitioner, so the state built from it stays
 * co-partitioned with the interval's shuffled input. Tasks prefer the executors that hold the
 * blocks (asked of the block manager master once, when the stage is planned).
 */
public final class StateBlocks extends RDD<byte[]> {
  private static final long serialVersionUID = 1L;
  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);

  private final int source;
  private final int count;
  private final Partitioner declared;
  private final byte[] marker;
  private final boolean[] lost;
  private transient List<List<String>> locations;

  private StateBlocks(
      SparkContext sc, int source, int count, Partitioner declared, byte[] marker, boolean[] lost) {
    super(sc, CollectionConverters.asScala(new ArrayList<org.apache.spark.Dependency<?>>()).toList(),
        BYTES);
    this.source = source;
    this.count = count;
    this.declared = declared;
    this.marker = marker.clone();
    this.lost = lost.clone();
  }

  /**
   * Called from Python: the blocks of RDD {@code source} ({@code count} partitions, {@code
   * declared} its partitioner or null), partitions {@code lost} ("1,3"; "" for none) read as
   * lost whether or not a block survives.
   */
  public static JavaRDD<byte[]> of(
      SparkContext sc, int source, int count, Partitioner declared, byte[] marker, String lost) {
    boolean[] skip = new boolean[count];
    for (String item : lost.split(",", -1)) {
      if (!item.isBlank()) {
        skip[Integer.parseInt(item.trim())] = true;
      }
    }
    return new StateBlocks(sc, source, count, declared, marker, skip).toJavaRDD();
  }

  /** A partition by its index alone. */
  private static final class Index implements Partition {
    private static final long serialVersionUID = 1L;
    private final int index;

    Index(int index) {
      this.index = index;
    }

    @Override
    public int index() {
      return index;
    }

    @Override
    public int hashCode() {
      return index;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof Index && ((Index) other).index == index;
    }
  }

  @Override
  public Partition[] getPartitions() {
    Partition[] out = new Partition[count];
    for (int i = 0; i < count; i++) {
      out[i] = new Index(i);
    }
    return out;
  }

  @Override
  @SuppressWarnings("unchecked")
  public scala.collection.Iterator<byte[]> compute(Partition split, TaskContext context) {
    int i = split.index();
    if (!lost[i]) {
      Option<BlockResult> block =
          SparkEnv.get().blockManager().get(new RDDBlockId(source, i), BYTES);
      if (block.isDefined()) {
        return (scala.collection.Iterator<byte[]>) (Object) block.get().data();
      }
    }
    return CollectionConverters.asScala(List.of(marker).iterator());
  }

  @Override
  public scala.collection.immutable.Seq<String> getPreferredLocations(Partition split) {
    if (locations == null) {
      locations = Blocks.holders(source, count);
    }
    return CollectionConverters.asScala(locations.get(split.index())).toList();
  }

  @Override
  public Option<Partitioner> partitioner() {
    return Option.apply(declared);
  }

  /** The executors holding each block, as task locations ("executor_HOST_ID"). */
  static List<String> asLocations(scala.collection.immutable.Seq<BlockManagerId> ids) {
    List<String> out = new ArrayList<>();
    for (BlockManagerId id : CollectionConverters.asJava(ids)) {
      out.add("executor_" + id.host() + "_" + id.executorId());
    }
    return out;
  }

  static BlockId[] ids(int source, int count) {
    BlockId[] ids = new BlockId[count];
    for (int i = 0; i < count; i++) {
      ids[i] = new RDDBlockId(source, i);
    }
    return ids;
  }
}
