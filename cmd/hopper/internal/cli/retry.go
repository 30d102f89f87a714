package cli

import "github.com/hopper-queue/hopper/queue"

// retrySignal is what says whether this worker, arriving at a complete
// build that did not pass, is a retry that runs again what did not pass
// (queue.Build.EnterRound): the CI's own signal, a job that comes back
// under a new attempt while the build id stays, or --retry-failed.
//
//   - GitLab CI: the job (CI_JOB_NAME, which names a parallel job's index
//     too) with a new CI_JOB_ID; a retried job keeps CI_PIPELINE_ID, the
//     build id.
//   - GitHub Actions: the run with a new GITHUB_RUN_ATTEMPT. The build id
//     hopper infers there includes the attempt, so a re-run is a new
//     build that runs everything; give --build "$GITHUB_RUN_ID" to keep
//     the build across attempts and re-run only what did not pass.
//   - Buildkite: the step's job (BUILDKITE_STEP_ID, BUILDKITE_PARALLEL_JOB)
//     with a new BUILDKITE_RETRY_COUNT; a retried job keeps
//     BUILDKITE_BUILD_ID.
//
// A job the build's latest round never saw is not a retry: it is one of
// the wave that round belongs to, come late.
func retrySignal(env Env, force bool) queue.RetrySignal {
	sig := queue.RetrySignal{Force: force}
	ci, ok := DetectCI(env)
	if !ok {
		return sig
	}
	switch ci.Vendor {
	case "GitLab CI":
		job, _ := env.first("CI_JOB_NAME")
		sig.Attempt, _ = env.first("CI_JOB_ID")
		sig.Slot = "gitlab:" + job
	case "GitHub Actions":
		sig.Attempt, _ = env.first("GITHUB_RUN_ATTEMPT")
		if sig.Attempt == "" {
			sig.Attempt = "1"
		}
		sig.Slot = "github:run"
	case "Buildkite":
		step, _ := env.first("BUILDKITE_STEP_ID")
		index, _ := env.first("BUILDKITE_PARALLEL_JOB")
		sig.Attempt, _ = env.first("BUILDKITE_RETRY_COUNT")
		if sig.Attempt == "" {
			sig.Attempt = "0"
		}
		sig.Slot = "buildkite:" + step + "/" + index
	}
	if sig.Attempt == "" {
		sig.Slot = "" // no attempt to tell retries apart
	}
	return sig
}
