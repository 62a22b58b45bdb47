// Package templatetext reads and fills a template's text: its positional placeholders {{1}},
// {{2}} …, the variables a send gives for them (by position, as "1", "2" …), and the bodies
// other channels render. The REST API checks templates and sends with it; the dispatcher builds
// a WhatsApp template's parameters with it.
package templatetext

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var placeholder = regexp.MustCompile(`\{\{\s*([0-9]+)\s*\}\}`)

// Placeholders lists the positions a text's placeholders name, in order, each once.
func Placeholders(text string) []int {
	seen := map[int]bool{}
	var out []int
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// CheckPositions says what is wrong with a text's placeholders: they must be {{1}} to {{n}},
// none missing ("" when they are).
func CheckPositions(text string) string {
	for i, n := range Placeholders(text) {
		if n != i+1 {
			return fmt.Sprintf("placeholders must run {{1}}, {{2}} … without a gap; {{%d}} is missing", i+1)
		}
	}
	return ""
}

// Mismatch is what a send's variables lack or have too many of, by name ("1", "2" …).
type Mismatch struct {
	Missing, Extra []string
}

// Empty tells whether the variables fit.
func (m Mismatch) Empty() bool { return len(m.Missing) == 0 && len(m.Extra) == 0 }

func (m Mismatch) String() string {
	var parts []string
	if len(m.Missing) > 0 {
		parts = append(parts, "missing "+strings.Join(m.Missing, ", "))
	}
	if len(m.Extra) > 0 {
		parts = append(parts, "not in the template "+strings.Join(m.Extra, ", "))
	}
	return strings.Join(parts, "; ")
}

// Match compares the variables a send gives with the placeholders of text.
func Match(text string, vars map[string]string) Mismatch {
	want := map[string]bool{}
	var m Mismatch
	for _, n := range Placeholders(text) {
		key := strconv.Itoa(n)
		want[key] = true
		if _, ok := vars[key]; !ok {
			m.Missing = append(m.Missing, key)
		}
	}
	for key := range vars {
		if !want[key] {
			m.Extra = append(m.Extra, key)
		}
	}
	sort.Strings(m.Extra)
	return m
}

// Render fills text's placeholders with vars (a placeholder without a value stays as it is).
func Render(text string, vars map[string]string) string {
	return placeholder.ReplaceAllStringFunc(text, func(ph string) string {
		n, err := strconv.Atoi(placeholder.FindStringSubmatch(ph)[1])
		if v, ok := vars[strconv.Itoa(n)]; ok && err == nil {
			return v
		}
		return ph
	})
}

// Ordered lists vars by position, 1 to the highest placeholder of text.
func Ordered(text string, vars map[string]string) []string {
	ps := Placeholders(text)
	out := make([]string, 0, len(ps))
	for _, n := range ps {
		out = append(out, vars[strconv.Itoa(n)])
	}
	return out
}
