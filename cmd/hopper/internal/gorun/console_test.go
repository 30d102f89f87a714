package gorun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const someEvents = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestA1"}
{"Action":"output","Package":"m/a","Test":"TestA1","Output":"=== RUN   TestA1\n"}
{"Action":"output","Package":"m/a","Test":"TestA1","Output":"    a_test.go:3: hi\n"}
{"Action":"output","Package":"m/a","Test":"TestA1","Output":"--- PASS: TestA1 (0.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestA1"}
{"Action":"run","Package":"m/a","Test":"TestA2"}
{"Action":"output","Package":"m/a","Test":"TestA2","Output":"=== RUN   TestA2\n"}
{"Action":"output","Package":"m/a","Test":"TestA2","Output":"    a_test.go:4: bad\n"}
{"Action":"output","Package":"m/a","Test":"TestA2","Output":"--- FAIL: TestA2 (0.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestA2"}
{"Action":"output","Package":"m/a","Output":"FAIL\n"}
{"Action":"fail","Package":"m/a"}
`

func TestConsoleTextAsGoTestPrintsIt(t *testing.T) {
	got := string(consoleText([]byte(someEvents), "m/a", false, false, 1500*time.Millisecond))
	assert.Equal(t, "    a_test.go:4: bad\n--- FAIL: TestA2 (0.00s)\nFAIL\nFAIL\tm/a\t1.500s\n", got)
	verbose := string(consoleText([]byte(someEvents), "m/a", false, true, time.Second))
	assert.Equal(t, "=== RUN   TestA1\n    a_test.go:3: hi\n--- PASS: TestA1 (0.00s)\n=== RUN   TestA2\n    a_test.go:4: bad\n--- FAIL: TestA2 (0.00s)\nFAIL\nFAIL\tm/a\t1.000s\n", verbose)
	assert.Equal(t, "ok  \tm/b\t0.250s\n", string(consoleText(nil, "m/b", true, false, 250*time.Millisecond)))
	cover := `{"Action":"output","Package":"m/c","Output":"PASS\n"}
{"Action":"output","Package":"m/c","Output":"coverage: 66.7% of statements\n"}
`
	assert.Equal(t, "ok  \tm/c\t0.100s\tcoverage: 66.7% of statements\n", string(consoleText([]byte(cover), "m/c", true, false, 100*time.Millisecond)))
}
