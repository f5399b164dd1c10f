package io.dstream.shim.ui;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.status.api.v1.JobData;
import scala.collection.Iterator;

/**
 * The Spark jobs of the application's status store (what /jobs/ shows), found by the job group
 * and job description the driver gave them: a batch document names its group, each output
 * operation its description. Links built from here point at jobs the UI still has.
 */
final class SparkJobs {
  private final Map<String, List<JobData>> byGroup = new HashMap<>();

  private SparkJobs() {}

  /** One pass over the status store's jobs (at most spark.ui.retainedJobs of them). */
  static SparkJobs of(SparkContext sc) {
    SparkJobs jobs = new SparkJobs();
    Iterator<JobData> it = sc.statusStore().jobsList(null).iterator();
    while (it.hasNext()) {
      JobData job = it.next();
      if (job.jobGroup().isDefined()) {
        jobs.byGroup.computeIfAbsent(job.jobGroup().get(), g -> new ArrayList<>()).add(job);
      }
    }
    for (List<JobData> group : jobs.byGroup.values()) {
      group.sort(Comparator.comparingInt(JobData::jobId));
    }
    return jobs;
  }

  /** The jobs of {@code group}, by id. */
  List<JobData> ofGroup(String group) {
    return byGroup.getOrDefault(group, List.of());
  }

  /** The jobs of {@code group} whose description is {@code description}, by id. */
  List<JobData> of(String group, String description) {
    List<JobData> out = new ArrayList<>();
    for (JobData job : ofGroup(group)) {
      if (job.description().isDefined() && job.description().get().equals(description)) {
        out.add(job);
      }
    }
    return out;
  }
}
