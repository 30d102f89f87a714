package cli

import (
	"os"
	"strconv"
	"strings"
)

// Env is the environment the command reads its fallbacks from. Tests give
// their own; main gives OSEnv.
type Env map[string]string

// OSEnv is the process's environment.
func OSEnv() Env {
	env := Env{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// first returns the first of names whose value is not empty, and its name.
func (e Env) first(names ...string) (value, name string) {
	for _, n := range names {
		if v := strings.TrimSpace(e[n]); v != "" {
			return v, n
		}
	}
	return "", ""
}

// CI is what a CI vendor's environment says about the build and the worker.
type CI struct {
	// Vendor names the CI: "CircleCI", "Buildkite", "GitHub Actions",
	// "GitLab CI".
	Vendor string
	// BuildID is the id every job of one pipeline run shares; empty when the
	// vendor's variable is not set.
	BuildID string
	// WorkerID tells the parallel jobs of the run apart; empty when the
	// vendor has none.
	WorkerID string
	// from says which variables gave the values, for messages.
	from string
}

// ciVendors are tried in order: the first whose marker is set wins.
var ciVendors = []struct {
	vendor, marker string
	build          func(Env) (string, string)
	worker         string
}{
	{"CircleCI", "CIRCLECI", func(e Env) (string, string) { return e.first("CIRCLE_WORKFLOW_ID", "CIRCLE_BUILD_NUM") }, "CIRCLE_NODE_INDEX"},
	{"Buildkite", "BUILDKITE", func(e Env) (string, string) { return e.first("BUILDKITE_BUILD_ID") }, "BUILDKITE_PARALLEL_JOB"},
	{"GitHub Actions", "GITHUB_ACTIONS", func(e Env) (string, string) {
		run, _ := e.first("GITHUB_RUN_ID")
		if run == "" {
			return "", ""
		}
		attempt, _ := e.first("GITHUB_RUN_ATTEMPT")
		if attempt == "" {
			attempt = "1"
		}
		return run + "-" + attempt, "GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT"
	}, ""},
	{"GitLab CI", "GITLAB_CI", func(e Env) (string, string) { return e.first("CI_PIPELINE_ID") }, "CI_NODE_INDEX"},
}

// DetectCI infers the build and worker ids from the first CI vendor whose
// marker variable is set (docs/cli.md). ok is false outside any of them.
func DetectCI(env Env) (ci CI, ok bool) {
	for _, v := range ciVendors {
		if m, _ := env.first(v.marker); m == "" || m == "false" {
			continue
		}
		ci = CI{Vendor: v.vendor}
		ci.BuildID, ci.from = v.build(env)
		if v.worker != "" {
			ci.WorkerID, _ = env.first(v.worker)
		}
		return ci, true
	}
	return CI{}, false
}

// ciBuildNames lists the variables each vendor's build id comes from, for
// the message of a missing build id.
func ciBuildNames() string {
	return "CIRCLE_WORKFLOW_ID/CIRCLE_BUILD_NUM, BUILDKITE_BUILD_ID, GITHUB_RUN_ID, CI_PIPELINE_ID"
}

// defaultWorkerID is <hostname>-<pid>.
func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}
