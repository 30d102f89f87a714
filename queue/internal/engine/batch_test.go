package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatchContext(t *testing.T) {
	call := func(ctx context.Context) *testOp { return &testOp{ctx: ctx} }

	// A lone requeue runs on its caller's context.
	type key struct{}
	lone := context.WithValue(context.Background(), key{}, "v")
	ctx, cancel := batchContext([]*testOp{call(lone)})
	assert.Equal(t, lone, ctx)
	cancel()

	// A batch ends when every caller has given up, not before.
	a, cancelA := context.WithCancel(lone)
	b, cancelB := context.WithCancel(context.Background())
	ctx, cancel = batchContext([]*testOp{call(a), call(b)})
	defer cancel()
	assert.Equal(t, "v", ctx.Value(key{}), "the first call's values")
	_, has := ctx.Deadline()
	assert.False(t, has)
	cancelA()
	select {
	case <-ctx.Done():
		t.Fatal("the batch ended while one caller still waits")
	case <-time.After(20 * time.Millisecond):
	}
	cancelB()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the batch goes on after every caller gave up")
	}
	require.ErrorIs(t, ctx.Err(), context.Canceled)

	// The latest deadline, when each caller has one; none otherwise.
	soon, c1 := context.WithTimeout(context.Background(), time.Minute)
	defer c1()
	later, c2 := context.WithTimeout(context.Background(), time.Hour)
	defer c2()
	ctx, cancel = batchContext([]*testOp{call(soon), call(later)})
	d, has := ctx.Deadline()
	want, _ := later.Deadline()
	assert.True(t, has)
	assert.Equal(t, want, d)
	cancel()
	ctx, cancel = batchContext([]*testOp{call(soon), call(context.Background())})
	_, has = ctx.Deadline()
	assert.False(t, has)
	cancel()
}

// testOp is an op of the tests' domain (see fake_domain_test.go).
type testOp = Op[string, testTrip]
