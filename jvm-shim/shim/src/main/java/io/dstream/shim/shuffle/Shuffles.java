package io.dstream.shim.shuffle;

import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.spark.Dependency;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.api.python.PairwiseRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.rdd.ShuffledRDD;

/**
 * Gives PySpark's shuffles in an RDD's lineage the {@link SharedKryo} serializer, before Spark
 * builds their shuffle dependencies (which is when a ShuffledRDD's serializer is read: when a
 * job first reaches it). A shuffle whose dependency is already built keeps the serializer it
 * has, so calling this late or twice changes nothing; only shuffles PySpark made (a {@code
 * PairwiseRDD} parent: {@code (Long, byte[])} records, for which Spark would pick its Kryo)
 * are touched.
 */
public final class Shuffles {
  // The RDDs walked already (weakly: an RDD nobody references any more is forgotten).
  private static final Set<RDD<?>> SEEN =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<RDD<?>, Boolean>()));

  private Shuffles() {}

  /**
   * Called from Python with an interval's RDD: how many of the shuffles in its lineage now
   * have the shared serializer that did not before (0 for a lineage walked already).
   */
  public static int share(RDD<?> rdd) {
    int set = 0;
    Deque<RDD<?>> todo = new ArrayDeque<>();
    todo.push(rdd);
    while (!todo.isEmpty()) {
      RDD<?> next = todo.pop();
      if (!SEEN.add(next)) {
        continue;
      }
      if (next instanceof ShuffledRDD) {
        ShuffledRDD<?, ?, ?> shuffled = (ShuffledRDD<?, ?, ?>) next;
        if (shuffled.prev() instanceof PairwiseRDD) {
          shuffled.setSerializer(SharedKryo.INSTANCE); // read when its dependency is built
          if (shares(shuffled)) {
            set++;
          }
        }
      }
      scala.collection.Iterator<Dependency<?>> deps = next.dependencies().iterator();
      while (deps.hasNext()) {
        todo.push(deps.next().rdd());
      }
    }
    return set;
  }

  /** Whether {@code rdd} is a shuffle with the shared serializer. */
  public static boolean shares(RDD<?> rdd) {
    if (!(rdd instanceof ShuffledRDD)) {
      return false;
    }
    scala.collection.Iterator<Dependency<?>> deps = rdd.dependencies().iterator();
    while (deps.hasNext()) {
      Dependency<?> dep = deps.next();
      if (dep instanceof ShuffleDependency
          && ((ShuffleDependency<?, ?, ?>) dep).serializer() instanceof SharedKryo) {
        return true;
      }
    }
    return false;
  }
}
