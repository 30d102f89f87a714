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
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue"
	"github.com/stretchr/testify/require"
)

func TestEngineDifferential(t *testing.T) {
	seqs, ops := envInt(t, "HOPPER_ENGINE_SEQUENCES", 12), envInt(t, "HOPPER_ENGINE_OPS", 200)
	seeds := engineSeeds(t, seqs)
	cov := &refCoverage{counts: map[string]int{}}
	start := time.Now()
	t.Run("sequences", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				t.Logf("seed %d: replay with HOPPER_ENGINE_SEED=%d", seed, seed)
				r := newRefRunOn(t, newEngineSide(t, queue.EngineInline), newEngineSide(t, queue.EngineDefault), seed, cov)
				r.label = fmt.Sprintf("seed %d (replay: HOPPER_ENGINE_SEED=%d)", seed, seed)
				r.run(ops)
			})
		}
	})
	cov.report(t, len(seeds), time.Since(start))
}

// engineSeeds are HOPPER_ENGINE_SEED alone, or n random seeds.
func engineSeeds(t *testing.T, n int) []uint64 {
	if s := os.Getenv("HOPPER_ENGINE_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HOPPER_ENGINE_SEED=%q: %v", s, err)
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
