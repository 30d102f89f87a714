package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDetectCI(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  Env
		want CI
		ok   bool
	}{
		{"none", Env{"CI": "true"}, CI{}, false},
		{"circleci workflow", Env{"CIRCLECI": "true", "CIRCLE_WORKFLOW_ID": "wf-1", "CIRCLE_BUILD_NUM": "77", "CIRCLE_NODE_INDEX": "2"},
			CI{Vendor: "CircleCI", BuildID: "wf-1", WorkerID: "2"}, true},
		{"circleci build number", Env{"CIRCLECI": "true", "CIRCLE_BUILD_NUM": "77"},
			CI{Vendor: "CircleCI", BuildID: "77"}, true},
		{"buildkite", Env{"BUILDKITE": "true", "BUILDKITE_BUILD_ID": "bk-9", "BUILDKITE_PARALLEL_JOB": "0"},
			CI{Vendor: "Buildkite", BuildID: "bk-9", WorkerID: "0"}, true},
		{"github", Env{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "123", "GITHUB_RUN_ATTEMPT": "2"},
			CI{Vendor: "GitHub Actions", BuildID: "123-2"}, true},
		{"github first attempt", Env{"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "123"},
			CI{Vendor: "GitHub Actions", BuildID: "123-1"}, true},
		{"gitlab", Env{"GITLAB_CI": "true", "CI_PIPELINE_ID": "555", "CI_NODE_INDEX": "3"},
			CI{Vendor: "GitLab CI", BuildID: "555", WorkerID: "3"}, true},
		{"first vendor wins", Env{"GITLAB_CI": "true", "CI_PIPELINE_ID": "555", "CIRCLECI": "true", "CIRCLE_BUILD_NUM": "77"},
			CI{Vendor: "CircleCI", BuildID: "77"}, true},
		{"marker without build id", Env{"GITHUB_ACTIONS": "true"}, CI{Vendor: "GitHub Actions"}, true},
		{"marker false", Env{"GITHUB_ACTIONS": "false", "GITHUB_RUN_ID": "1"}, CI{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := DetectCI(tc.env)
			got.from = ""
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
