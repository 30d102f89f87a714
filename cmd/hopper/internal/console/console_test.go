package console

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// One buffer stands for the terminal both streams write to.
func TestLiveLineNeverInterleaves(t *testing.T) {
	var term bytes.Buffer
	c := New(&term, &term, true, func() int { return 20 })
	c.SetLine("[1/4] 25%")
	fmt.Fprint(c.Out(), "==> a: passed\nok\n")
	c.SetLine("[2/4] 50% and a long tail that does not fit")
	fmt.Fprint(c.Err(), "Retrying b\n")
	c.Done()
	assert.Equal(t,
		"[1/4] 25%"+"\r\x1b[K"+"==> a: passed\nok\n"+"[1/4] 25%"+
			"\r\x1b[K"+"[2/4] 50% and a lon"+"\r\x1b[K"+"Retrying b\n"+"[2/4] 50% and a lon"+
			"\r\x1b[K", term.String())
}

func TestNotLive(t *testing.T) {
	var out, errs bytes.Buffer
	c := New(&out, &errs, false, nil)
	c.SetLine("ignored")
	fmt.Fprint(c.Out(), "output\n")
	c.Println("progress: 1 of 2")
	c.Done()
	assert.Equal(t, "output\n", out.String())
	assert.Equal(t, "progress: 1 of 2\n", errs.String())
}

// Concurrent writers each land whole, never split by the line.
func TestConcurrentWrites(t *testing.T) {
	var term bytes.Buffer
	c := New(&term, &term, true, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				fmt.Fprintf(c.Out(), "unit %d-%d output\n", i, j)
				c.SetLine(fmt.Sprintf("[%d/%d]", i, j))
			}
		}()
	}
	wg.Wait()
	c.Done()
	clean := strings.ReplaceAll(term.String(), "\r\x1b[K", "\n")
	n := 0
	for _, line := range strings.Split(clean, "\n") {
		if strings.HasPrefix(line, "unit ") {
			assert.Regexp(t, `^unit \d-\d+ output$`, line)
			n++
		}
	}
	assert.Equal(t, 400, n)
}
