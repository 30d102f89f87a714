package integration

// The inline engine against the default one: the random sequences of the
// reference comparison (reference_test.go), run through Transition on two
// builds, one opened with queue.EngineInline, the other with
// queue.EngineDefault. The inline engine runs each transition alone, on
// reads of its own; the default one on what it batches, chains, keeps and
// learns. After every operation their replies and their whole normalized
// states, the attempt log included, must be equal.
//
// Environment: HOPPER_ENGINE_SEED replays one sequence;
// HOPPER_ENGINE_SEQUENCES and HOPPER_ENGINE_OPS change the default 12
// sequences of 200 operations.

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/require"
)

func TestEngineDifferential(t *testing.T) {
	runSequences(t, "HOPPER_ENGINE", 12, 200, func(t *testing.T, seed uint64, cov *refCoverage) *refRun {
		return newRefRunOn(t, newEngineSide(t, queue.EngineInline), newEngineSide(t, queue.EngineDefault), seed, cov)
	})
}

// seedsFrom is the seed the environment variable name gives, alone, to
// replay one sequence, or n random seeds.
func seedsFrom(t *testing.T, name string, n int) []uint64 {
	if s := os.Getenv(name); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, s, err)
		}
		return []uint64{seed}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = rand.Uint64() % 1e12
	}
	return seeds
}

// newEngineSide is a build driven through the Transition of a Build opened
// with engine, through the client under test.
func newEngineSide(t *testing.T, engine queue.Engine) *refSide {
	e := newEnv(t)
	b, err := queue.OpenScript(e.client, e.scriptKeys(), queue.Options{TTL: ttlMS * time.Millisecond, Engine: engine})
	require.NoError(t, err)
	s := &refSide{name: string(engine), e: e, toLogical: map[string]string{}, toReal: map[string]string{}, handWritten: map[string]bool{}}
	s.call = func(argv []string) ([]any, error) { return b.Transition(e.ctx, argv) }
	return s
}
