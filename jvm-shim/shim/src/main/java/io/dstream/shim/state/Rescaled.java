package io.dstream.shim.state;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.NarrowDependency;
import org.apache.spark.Partition;
import org.apache.spark.Partitioner;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * A keyed state's partitions regrouped into another number of hash partitions without a
 * shuffle: partition {@code i} of this RDD reads the parent partitions {@code parents[i]}
 * (narrow dependencies, run where those partitions are cached) and declares the hash
 * partitioner of the new count, so the state stays co-partitioned with the new interval's
 * shuffled input. Which records of a parent partition belong to partition {@code i} is
 * decided by the Python task that reads this RDD (it hashes the keys): with {@code n} doubled
 * each new partition reads one old one and keeps half of it; with {@code n} halved it reads two
 * and keeps everything.
 */
public final class Rescaled extends RDD<byte[]> {
  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);

  private final RDD<byte[]> prev;
  private final Partitioner declared;
  private final int[][] parents;

  private Rescaled(RDD<byte[]> prev, Partitioner declared, int[][] parents) {
    super(prev.context(), dependencies(prev, parents), BYTES);
    this.prev = prev;
    this.declared = declared;
    this.parents = parents;
  }

  /**
   * Called from Python: {@code parents} is "0,2;1,3" (new partition 0 reads old 0 and 2, new
   * partition 1 reads old 1 and 3).
   */
  public static JavaRDD<byte[]> of(RDD<byte[]> prev, Partitioner declared, String parents) {
    String[] groups = parents.split(";", -1);
    int[][] table = new int[groups.length][];
    for (int i = 0; i < groups.length; i++) {
      String[] items = groups[i].split(",", -1);
      table[i] = new int[items.length];
      for (int j = 0; j < items.length; j++) {
        table[i][j] = Integer.parseInt(items[j].trim());
      }
    }
    if (declared.numPartitions() != table.length) {
      throw new IllegalArgumentException(
          "the partitioner has " + declared.numPartitions() + " partitions, the table "
              + table.length);
    }
    return new Rescaled(prev, declared, table).toJavaRDD();
  }

  private static scala.collection.immutable.Seq<org.apache.spark.Dependency<?>> dependencies(
      RDD<byte[]> prev, int[][] parents) {
    List<org.apache.spark.Dependency<?>> deps = new ArrayList<>();
    deps.add(new Regrouped(prev, parents));
    return CollectionConverters.asScala(deps).toList();
  }

  /** Partition i of the child depends on parents[i] of the parent. */
  private static final class Regrouped extends NarrowDependency<byte[]> {
    private static final long serialVersionUID = 1L;
    private final int[][] parents;

    Regrouped(RDD<byte[]> prev, int[][] parents) {
      super(prev);
      this.parents = parents;
    }

    @Override
    public scala.collection.immutable.Seq<Object> getParents(int partitionId) {
      List<Object> out = new ArrayList<>();
      for (int p : parents[partitionId]) {
        out.add(p);
      }
      return CollectionConverters.asScala(out).toList();
    }
  }

  /** A child partition and the parent partitions it reads (resolved on the driver). */
  private static final class Group implements Partition {
    private static final long serialVersionUID = 1L;
    private final int index;
    private final Partition[] from;

    Group(int index, Partition[] from) {
      this.index = index;
      this.from = from;
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
      return other instanceof Group && ((Group) other).index == index;
    }
  }

  @Override
  public Partition[] getPartitions() {
    Partition[] old = prev.partitions();
    Partition[] out = new Partition[parents.length];
    for (int i = 0; i < parents.length; i++) {
      Partition[] from = new Partition[parents[i].length];
      for (int j = 0; j < from.length; j++) {
        from[j] = old[parents[i][j]];
      }
      out[i] = new Group(i, from);
    }
    return out;
  }

  @Override
  public scala.collection.Iterator<byte[]> compute(Partition split, TaskContext context) {
    Partition[] from = ((Group) split).from;
    List<java.util.Iterator<byte[]>> parts = new ArrayList<>();
    for (Partition p : from) {
      parts.add(CollectionConverters.asJava(prev.iterator(p, context)));
    }
    java.util.Iterator<java.util.Iterator<byte[]>> each = parts.iterator();
    return CollectionConverters.asScala(
        new java.util.Iterator<byte[]>() {
          private java.util.Iterator<byte[]> current = java.util.Collections.emptyIterator();

          @Override
          public boolean hasNext() {
            while (!current.hasNext() && each.hasNext()) {
              current = each.next();
            }
            return current.hasNext();
          }

          @Override
          public byte[] next() {
            if (!hasNext()) {
              throw new java.util.NoSuchElementException();
            }
            return current.next();
          }
        });
  }

  @Override
  public scala.collection.immutable.Seq<String> getPreferredLocations(Partition split) {
    return prev.preferredLocations(((Group) split).from[0]);
  }

  @Override
  public Option<Partitioner> partitioner() {
    return Option.apply(declared);
  }
}
