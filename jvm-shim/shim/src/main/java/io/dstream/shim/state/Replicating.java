package io.dstream.shim.state;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.OneToOneDependency;
import org.apache.spark.Partition;
import org.apache.spark.Partitioner;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.RDDBlockId;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * A state RDD whose chosen partitions get a second copy in another executor's memory: the
 * same records as its parent (one-to-one), persisted by the caller with one copy; when a task
 * has computed (and so cached) a chosen partition, it copies that block to one other executor
 * as it completes, the way Spark's proactive replication does. Which partitions are chosen is
 * the replica planner's (a budget in MB spent where it buys the most weighted fidelity); the
 * others keep one copy. No extra job runs: the copy is a side effect of the task that computed
 * the partition anyway.
 */
public final class Replicating extends RDD<byte[]> {
  private static final long serialVersionUID = 1L;
  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);

  private final RDD<byte[]> prev;
  private final boolean[] chosen;

  private Replicating(RDD<byte[]> prev, boolean[] chosen) {
    super(prev.context(), dependency(prev), BYTES);
    this.prev = prev;
    this.chosen = chosen.clone();
  }

  /** Called from Python: {@code prev} with a second copy of partitions {@code chosen} ("0,4"). */
  public static JavaRDD<byte[]> of(RDD<byte[]> prev, String chosen) {
    boolean[] marks = new boolean[prev.partitions().length];
    for (String item : chosen.split(",", -1)) {
      if (!item.isBlank()) {
        marks[Integer.parseInt(item.trim())] = true;
      }
    }
    return new Replicating(prev, marks).toJavaRDD();
  }

  private static scala.collection.immutable.Seq<org.apache.spark.Dependency<?>> dependency(
      RDD<byte[]> prev) {
    List<org.apache.spark.Dependency<?>> deps = new ArrayList<>();
    deps.add(new OneToOneDependency<>(prev));
    return CollectionConverters.asScala(deps).toList();
  }

  @Override
  public Partition[] getPartitions() {
    return prev.partitions();
  }

  @Override
  public scala.collection.Iterator<byte[]> compute(Partition split, TaskContext context) {
    int i = split.index();
    if (chosen[i]) {
      RDDBlockId block = new RDDBlockId(id(), i);
      context.addTaskCompletionListener(
          (TaskContext done) -> {
            if (!done.isInterrupted()) {
              BlockManager manager = SparkEnv.get().blockManager();
              // A no-op when this executor does not hold the block (the task failed first).
              // The replicas besides this one (none): one more copy, on a peer.
              manager.replicateBlock(
                  block,
                  CollectionConverters.asScala(Set.<BlockManagerId>of()).toSet(),
                  2,
                  Option.empty());
            }
          });
    }
    return prev.iterator(split, context);
  }

  @Override
  public scala.collection.immutable.Seq<String> getPreferredLocations(Partition split) {
    return prev.preferredLocations(split);
  }

  @Override
  public Option<Partitioner> partitioner() {
    return prev.partitioner();
  }
}
