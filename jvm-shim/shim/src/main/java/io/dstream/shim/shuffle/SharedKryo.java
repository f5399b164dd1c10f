package io.dstream.shim.shuffle;

import java.io.Serializable;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.serializer.KryoSerializer;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;

/**
 * Spark's Kryo serializer with one pool of Kryo instances per JVM.
 *
 * <p>A PySpark shuffle's records are {@code (Long, byte[])}, for which Spark picks its
 * {@code KryoSerializer}. That serializer travels inside every task (in the stage's
 * {@code ShuffleDependency}), and a deserialized {@code KryoSerializer} starts with an empty
 * pool, so every map task and every reduce task builds a new Kryo and registers Kryo's and
 * Scala's classes in it again: 18 % of an executor's CPU samples in a 2 s interval of the
 * chaos program (bench/README, "Third 12-02 session"). This serializer is what travels
 * instead: nothing but its class, and each JVM's instances come from one {@code
 * KryoSerializer} made from that JVM's {@code SparkConf} on first use, whose pool outlives the
 * task. The bytes are the same Kryo's. A tight loop of 4-partition {@code reduceByKey} jobs on
 * {@code local-cluster[2,1,1024]}: executor CPU 13.2-16.1 s instead of 21.2-21.4 s per 150 jobs.
 */
public final class SharedKryo extends Serializer implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The one value to set on shuffles: every instance behaves the same. */
  public static final SharedKryo INSTANCE = new SharedKryo();

  // The SparkEnv the shared serializer was made for, and it: a JVM that runs one
  // SparkContext after another (local mode) gets one made from each one's conf.
  private static volatile Object[] shared = {null, null};

  private SharedKryo() {}

  static KryoSerializer shared() {
    SparkEnv env = SparkEnv.get();
    Object[] current = shared;
    if (current[0] != env || current[1] == null) {
      synchronized (SharedKryo.class) {
        current = shared;
        if (current[0] != env || current[1] == null) {
          SparkConf conf = env == null ? new SparkConf() : env.conf();
          current = new Object[] {env, new KryoSerializer(conf)};
          shared = current;
        }
      }
    }
    return (KryoSerializer) current[1];
  }

  @Override
  public SerializerInstance newInstance() {
    return shared().newInstance();
  }

  @Override
  public boolean supportsRelocationOfSerializedObjects() {
    return shared().supportsRelocationOfSerializedObjects();
  }

  private Object readResolve() {
    return INSTANCE;
  }
}
