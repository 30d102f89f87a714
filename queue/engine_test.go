package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopper-queue/hopper/queue/internal/machinery"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

func TestEngineChoice(t *testing.T) {
	client := mock.NewClient(gomock.NewController(t))
	t.Setenv(engineEnv, "")
	if b, err := Open(client, "e", Options{}); err != nil || b.core.eng.Inline() {
		t.Fatalf("zero options, no %s: inline=%v err=%v, want the default engine", engineEnv, b != nil && b.core.eng.Inline(), err)
	}
	t.Setenv(engineEnv, string(EngineInline))
	b, err := Open(client, "e", Options{})
	if err != nil || !b.core.eng.Inline() || !b.core.eng.Clock.Fresh || !b.core.entries.off || !b.core.eng.Reclaims.Off || !b.core.eng.Consumers.Off {
		t.Fatalf("%s=inline: every gate must be off (err %v)", engineEnv, err)
	}
	if b, err := Open(client, "e", Options{Engine: EngineDefault}); err != nil || b.core.eng.Inline() {
		t.Fatalf("Options.Engine wins over %s: inline=%v err=%v", engineEnv, b != nil && b.core.eng.Inline(), err)
	}
	_, err = Open(client, "e", Options{Engine: "turbo"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `"turbo"`) {
		t.Errorf("engine turbo: %v, want ErrInvalidArgument naming it", err)
	}
}

// The inline engine's clock tells nothing of its own: each decision reads
// a TIME.
func TestInlineClockHoldsNoAnchor(t *testing.T) {
	c := machinery.NewClock(machinery.MonotonicNow)
	c.Fresh = true
	c.Anchor(1_000, c.Mono())
	if _, ok := c.Now(); ok {
		t.Error("the inline clock told a time from an anchor")
	}
	if !c.Due() {
		t.Error("the inline clock is not due for a TIME on every round trip")
	}
}

func TestBuildTransitionRefusals(t *testing.T) {
	client := mock.NewClient(gomock.NewController(t))
	keys := []string{"{b}:units", "{b}:units:priority", "{b}:attempts", "{b}:meta", "{b}:unit_state", "{b}:workers"}
	b, err := OpenScript(client, keys, Options{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = b.Transition(ctx, []string{ModeLiveness, "w1", "1000"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "ttl_ms 1000") {
		t.Errorf("ttl_ms other than the Build's: %v, want ErrInvalidArgument naming it", err)
	}
	typed, err := OpenKeys(client, b.Keys(), Options{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = typed.Transition(ctx, []string{ModeLiveness, "w1", "60000"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "OpenScript") {
		t.Errorf("Transition on a Build not from OpenScript: %v, want ErrInvalidArgument", err)
	}
	if _, err := OpenScript(client, keys[:5], Options{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("five keys: %v, want ErrInvalidArgument", err)
	}
}
