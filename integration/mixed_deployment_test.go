package integration

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopper-queue/hopper/queue"
)

// The script and hopper on one build: worker a runs on the script, which
// writes no guards; r, on hopper, reclaims a's unit (timeout 0, budget
// spent: the reclaim finalizes it). Had r's reclaim read the entry and
// then committed after the script's finalize, nothing would have aborted
// it and the unit would have been finalized twice. The build was laid out
// without hopper's guarded mark, so Transition refuses it from the first
// read, and the script's finalize is the only one.
func TestScriptAndHopperOnOneBuild(t *testing.T) {
	sha := loadReference(t)
	e := newEnv(t)
	e.publish([]string{"u1"}, map[string]string{"max_reclaims": "0"})
	e.unguarded() // as the script's publisher leaves it
	script := func(argv ...string) []any {
		t.Helper()
		cmd := e.admin.B().Evalsha().Sha1(sha).Numkeys(6).Key(e.scriptKeys()...).Arg(argv...).Build()
		reply, err := scriptReply(e.admin.Do(e.ctx, cmd))
		require.NoError(t, err, "script %v", argv)
		return reply
	}
	x, ok := e.reserve("a")
	require.True(t, ok)
	require.Equal(t, "OK", script("delivery_accounting", "a", "600000", "units", x.id, x.unit)[0])

	proxy := newCommitGate(t)
	rc := proxy.client(t)
	proxy.armed.Store(true)
	var reply []any
	var rerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		reply, rerr = queue.Transition(e.ctx, rc, e.scriptKeys(), []string{"reclaim", "r", "600000", "0", "0"})
	}()
	held := proxy.waitHeld(t, done)
	t.Logf("hopper's reclaim held at its commit: %v", held)
	assert.Equal(t, []any{"OK"}, script("finalize", "a", "600000", "units", x.id, "1", x.unit, "passed", "5", "", ""))
	proxy.open()
	<-done

	assert.Equal(t, 1, countEvents(e, "finalized", x.unit), "finalized events of %s", x.unit)
	assert.Equal(t, "1", e.hash(e.keys.Meta)["finalized_count"])
	require.ErrorIs(t, rerr, queue.ErrUnguarded, "hopper's reclaim on the script's build (reply %v)", reply)
	assert.False(t, held, "refused before it reached a commit")
	assert.Contains(t, rerr.Error(), e.keys.Meta, "the error names the build's meta")
}

// Every Transition that reads meta refuses a build without the guarded
// mark, writing nothing; prebuilt events, which read no meta and decide on
// no entry, are appended. A build without meta stays CORRUPT, as in the
// reference. Publish marks its builds.
func TestTransitionRefusesUnguardedBuild(t *testing.T) {
	e := newEnv(t)
	e.publish([]string{"u1", "u2"}, map[string]string{"max_requeues": "1", "requeue_tolerance": "1"})
	x, ok := e.reserve("a")
	require.True(t, ok)
	e.transition("delivery_accounting", "a", "600000", "units", x.id, x.unit)
	e.unguarded()
	const ttl = "600000"
	for _, argv := range [][]string{
		{"delivery_accounting", "a", ttl, "units", x.id, x.unit},
		{"heartbeat", "a", ttl, "units", x.id, "1", x.unit},
		{"finalize", "a", ttl, "units", x.id, "1", x.unit, "passed", "5", "", ""},
		{"requeue", "a", ttl, "units", x.id, "1", x.unit, "file", "1", "1", "5", "", ""},
		{"abandoned", "a", ttl, "units", x.id, "1", x.unit, "5"},
		{"reclaim", "r", ttl, "0", "3"},
		{"liveness", "a", ttl, ""},
	} {
		t.Run(argv[0], func(t *testing.T) {
			e.requireNoChange(func() {
				reply, err := queue.Transition(e.ctx, e.client, e.scriptKeys(), argv)
				require.ErrorIs(t, err, queue.ErrUnguarded, "reply %v", reply)
				assert.False(t, errors.Is(err, queue.ErrInvalidArgument))
			})
		})
	}
	t.Run("worker_error", func(t *testing.T) {
		assert.Equal(t, []any{"OK"}, e.transition("worker_error", "a", ttl, `{"type":"worker_error","worker_id":"a"}`))
	})
	t.Run("meta missing", func(t *testing.T) {
		require.NoError(t, e.do("DEL", e.keys.Meta).Error())
		assert.Equal(t, []any{"CORRUPT"}, e.transition("finalize", "a", ttl, "units", x.id, "1", x.unit, "passed", "5", "", ""))
		assert.Equal(t, []any{"CORRUPT"}, e.transition("reclaim", "r", ttl, "0", "3"))
	})
}
