package chunk

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"   \n\t ", 2},             // no words; 6 characters
		{"hello", 2},                // 1 word: 1.3 → 2
		{"the cat sat", 4},          // 3 words: 3.9 → 4; 11 characters → 3
		{"a a a a a a a a a a", 13}, // 10 words: 13; 19 characters → 5
		{"internationalization", 5}, // 1 word, 20 characters → 5
		{"https://example.com/a/very/long/path?with=query&and=more", 14}, // 56 characters
		{"你好世界", 6},            // 4 words (a character each): 5.2 → 6
		{"你好，世界。", 8},          // punctuation too: 6 words → 7.8 → 8
		{"Tokyo東京", 4},         // "Tokyo" and 2 characters: 3 words → 3.9 → 4
		{"  two   words  ", 4}, // 2 words: 2.6 → 3; 15 characters → 4
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.in); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o               Options
		tokens, overlap int
	}{
		{Options{}, 600, 120},
		{Options{Tokens: -5, Overlap: 0}, 600, 120},
		{Options{Tokens: 1000, Overlap: 50}, 1000, 50},
		{Options{Tokens: 100}, 100, 50},
		{Options{Tokens: 100, Overlap: -1}, 100, 0},
		{Options{Tokens: 3, Overlap: 3}, 8, 3},
	}
	for _, tt := range tests {
		if tokens, overlap := tt.o.limits(); tokens != tt.tokens || overlap != tt.overlap {
			t.Errorf("%+v: %d, %d; want %d, %d", tt.o, tokens, overlap, tt.tokens, tt.overlap)
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		o    Options
		want []Chunk
	}{
		{name: "empty", in: "", want: nil},
		{name: "blank", in: " \n\n\t \r\n", want: nil},
		{
			name: "short text, whitespace normalised",
			in:   "  Hello,\tworld.\nSame   paragraph.\n \n\n New one. ",
			want: []Chunk{{Text: "Hello, world. Same paragraph.\n\nNew one.", Start: 2, End: 46, Tokens: 10}},
		},
		{
			name: "rune offsets",
			in:   "Ça va?  Très bien.",
			want: []Chunk{{Text: "Ça va? Très bien.", Start: 0, End: 18, Tokens: 6}},
		},
		{
			name: "CRLF paragraphs",
			in:   "one\r\ntwo\r\n\r\nthree",
			want: []Chunk{{Text: "one two\n\nthree", Start: 0, End: 17, Tokens: 4}},
		},
		{
			// Paragraphs of 3 tokens (11 characters): 2 fit in 9 tokens, and 1 sentence of the
			// third, which is left for the next chunk. The overlap is 2 whole sentences.
			name: "paragraphs",
			in:   "aaaa. bbbb.\n\ncccc. dddd.\n\neeee. ffff.\n\ngggg. hhhh.",
			o:    Options{Tokens: 9, Overlap: 3},
			want: []Chunk{
				{Text: "aaaa. bbbb.\n\ncccc. dddd.", Start: 0, End: 24, Tokens: 6},
				{Text: "cccc. dddd.\n\neeee. ffff.", Start: 13, End: 37, Tokens: 6},
				{Text: "eeee. ffff.\n\ngggg. hhhh.", Start: 26, End: 50, Tokens: 6},
			},
		},
		{
			// 12 tokens fit up to "nine": the chunk ends at the sentence, which leaves it
			// half full (7 tokens).
			name: "sentence before word",
			in:   "one two three four five. six seven eight nine ten eleven",
			o:    Options{Tokens: 12, Overlap: -1},
			want: []Chunk{
				{Text: "one two three four five.", Start: 0, End: 24, Tokens: 7},
				{Text: "six seven eight nine ten eleven", Start: 25, End: 56, Tokens: 8},
			},
		},
		{
			// Up to 3 tokens of overlap: "six seven" (2 words, 9 characters) is 3.
			name: "words of a long sentence, overlapping by words",
			in:   "one two three four five six seven eight nine ten eleven twelve",
			o:    Options{Tokens: 10, Overlap: 3},
			want: []Chunk{
				{Text: "one two three four five six seven", Start: 0, End: 33, Tokens: 10},
				{Text: "six seven eight nine ten eleven twelve", Start: 24, End: 62, Tokens: 10},
			},
		},
		{
			// "go" is a chunk by itself rather than be cut from its word; the x's are cut in
			// pieces of 8 (2 tokens: a sixteenth of the chunk, at least 2 tokens), and the
			// chunk after a cut begins 16 characters (4 tokens) before it.
			name: "a word too long is cut by characters, with an overlap of characters",
			in:   "go " + strings.Repeat("x", 100) + " end",
			o:    Options{Tokens: 16, Overlap: 4},
			want: []Chunk{
				{Text: "go", Start: 0, End: 2, Tokens: 2},
				{Text: strings.Repeat("x", 64), Start: 3, End: 67, Tokens: 16},
				{Text: strings.Repeat("x", 52) + " end", Start: 51, End: 107, Tokens: 14},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i := range tt.want {
				tt.want[i].Index = i
			}
			got := Split(tt.in, tt.o)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Split(%q) =", tt.in)
				for _, c := range got {
					t.Errorf("  %+v", c)
				}
				t.Errorf("want")
				for _, c := range tt.want {
					t.Errorf("  %+v", c)
				}
			}
		})
	}
}

// TestSentences checks that chunks end at sentence ends, and not after an abbreviation or inside
// a number: sentences are up to 16 tokens, so one always ends in a chunk's second half, and a
// chunk that ended after "Dr." or "e.g." (later in the sentence) would show; the overlap (20
// tokens) is a whole sentence.
func TestSentences(t *testing.T) {
	t.Parallel()
	sentences := []string{
		"We met Dr. Smith and Mr. Jones on the way to work.",
		"They wanted, e.g. something warm to eat at home.",
		"The bill came to 3.5 dollars at J. Doe's shop then.",
		"Was it cheap?", "Yes!", "The U.S. price was much higher.",
		"She said “it was fine.”", "We left the place at noon.",
	}
	var b strings.Builder
	for i := range 40 {
		b.WriteString(sentences[i%len(sentences)] + " ")
	}
	chunks := Split(b.String(), Options{Tokens: 50, Overlap: 20})
	if len(chunks) < 10 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for _, c := range chunks {
		ok := false
		for _, s := range sentences {
			ok = ok || strings.HasSuffix(c.Text, s)
		}
		// The overlap is whole sentences: a chunk begins with one too.
		starts := false
		for _, s := range sentences {
			starts = starts || strings.HasPrefix(c.Text, s)
		}
		if !ok || !starts || c.Tokens > 50 {
			t.Errorf("chunk %d does not begin and end with a whole sentence: %q", c.Index, c.Text)
		}
	}
}

func TestSentenceEnd(t *testing.T) {
	t.Parallel()
	for w, want := range map[string]bool{
		"end.": true, "end!": true, "end?": true, "end?!": true, "wait…": true, "2019.": true,
		`fine."`: true, "(fine.)": true, "I.": true, "a.": true, "end。": true, "end！": true,
		"end": false, "end,": false, "3.5": false, "e.g.": false, "i.e.": false, "U.S.": false,
		"Dr.": false, "mr.": false, "(e.g.": false, "J.": false, "Sra.": false, "example.com": false,
	} {
		if got := sentenceEnd(w); got != want {
			t.Errorf("sentenceEnd(%q) = %v", w, got)
		}
	}
}

// TestCJK checks that CJK text, written without spaces, is cut after its sentence ends and
// that no space is put in.
func TestCJK(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("今天天气很好。我们去公园吧！你觉得怎么样？「好的。」", 20)
	chunks := Split(in, Options{Tokens: 60, Overlap: 15})
	if len(chunks) < 5 {
		t.Fatalf("%d chunks", len(chunks))
	}
	runes := []rune(in)
	for i, c := range chunks {
		if c.Text != string(runes[c.Start:c.End]) {
			t.Errorf("chunk %d is %q, not the input's [%d, %d)", i, c.Text, c.Start, c.End)
		}
		if last, _ := utf8.DecodeLastRuneInString(c.Text); !strings.ContainsRune("。！？」", last) || c.Tokens > 60 {
			t.Errorf("chunk %d (%d tokens) does not end a sentence: %q", i, c.Tokens, c.Text)
		}
		if i > 0 && (c.Start >= chunks[i-1].End || c.Start <= chunks[i-1].Start) {
			t.Errorf("chunk %d [%d, %d) does not overlap the one before [%d, %d)", i, c.Start, c.End, chunks[i-1].Start, chunks[i-1].End)
		}
	}
	if chunks[0].Start != 0 || chunks[len(chunks)-1].End != len(runes) {
		t.Errorf("chunks cover [%d, %d) of %d runes", chunks[0].Start, chunks[len(chunks)-1].End, len(runes))
	}
	// A run of CJK with no sentence end is cut between characters.
	long := strings.Repeat("天", 300)
	for _, c := range Split(long, Options{Tokens: 50}) {
		if c.Tokens > 50 || c.Text != string([]rune(long)[c.Start:c.End]) {
			t.Errorf("chunk %+v", c)
		}
	}
}

// TestProperties splits random paragraphs with random options: each chunk is the input's
// words from one to another, normalised; together they cover them all in order, each within
// the limit, and each overlapping the one before by whole sentences up to the overlap.
func TestProperties(t *testing.T) {
	t.Parallel()
	vocabulary := strings.Fields(`the a refund policy order shipping customer days business return item
		within account password reset delivery tracking number café naïve 東京 información
		internationalization 3.5 e.g. Dr. https://example.com/docs?page=2 (see) "quoted" it's`)
	spaces := []string{" ", " ", " ", "  ", "\t", "\n", " \n "}
	breaks := []string{"\n\n", "\n\n\n", "\n \n", "\r\n\r\n", "\n\t\n  "}
	longestWord := 0
	for _, w := range vocabulary {
		longestWord = max(longestWord, EstimateTokens(w+"?"))
	}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var b strings.Builder
		longestSentence := 0
		for p := range 1 + rng.IntN(12) {
			if p > 0 {
				b.WriteString(breaks[rng.IntN(len(breaks))])
			}
			for s := range 1 + rng.IntN(8) {
				if s > 0 {
					b.WriteString(spaces[rng.IntN(len(spaces))])
				}
				words := make([]string, 1+rng.IntN(20))
				for i := range words {
					words[i] = vocabulary[rng.IntN(len(vocabulary))]
				}
				sentence := strings.Join(words, " ") + []string{".", "!", "?"}[rng.IntN(3)]
				longestSentence = max(longestSentence, EstimateTokens(sentence))
				b.WriteString(sentence)
			}
		}
		in := b.String()
		o := Options{Tokens: []int{0, 20 + rng.IntN(40), 50 + rng.IntN(500)}[rng.IntN(3)]}
		switch rng.IntN(4) {
		case 0:
			o.Overlap = -1
		case 1:
			o.Overlap = 5 + rng.IntN(200)
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkProperties(t, in, o, longestWord, longestSentence)
		})
	}
}

type word struct {
	text       string
	start, end int    // rune offsets
	sep        string // normalised whitespace before it
}

func inputWords(in string) []word {
	var words []word
	runes := []rune(in)
	for i := 0; i < len(runes); {
		j := i
		for j < len(runes) && unicode.IsSpace(runes[j]) {
			j++
		}
		if j == len(runes) {
			break
		}
		sep := " "
		if ws := strings.ReplaceAll(string(runes[i:j]), "\r\n", "\n"); strings.Count(ws, "\n") >= 2 {
			sep = "\n\n"
		}
		k := j
		for k < len(runes) && !unicode.IsSpace(runes[k]) {
			k++
		}
		words = append(words, word{string(runes[j:k]), j, k, sep})
		i = k
	}
	return words
}

func checkProperties(t *testing.T, in string, o Options, longestWord, longestSentence int) {
	t.Helper()
	tokens, overlap := o.limits()
	words := inputWords(in)
	chunks := Split(in, o)
	if len(chunks) == 0 {
		t.Fatalf("no chunks of %d words", len(words))
	}
	prevA, prevB := -1, 0 // the words of the chunk before: [prevA, prevB)
	for i, c := range chunks {
		a := slices.IndexFunc(words, func(w word) bool { return w.start == c.Start })
		b := slices.IndexFunc(words, func(w word) bool { return w.end == c.End }) + 1
		if c.Index != i || a < 0 || b <= a {
			t.Fatalf("chunk %d: index %d, [%d, %d) is not words of the input", i, c.Index, c.Start, c.End)
		}
		var want strings.Builder
		for k := a; k < b; k++ {
			if k > a {
				want.WriteString(words[k].sep)
			}
			want.WriteString(words[k].text)
		}
		if c.Text != want.String() {
			t.Fatalf("chunk %d is %q, want the input's words %d to %d: %q", i, c.Text, a, b, want.String())
		}
		if c.Tokens != EstimateTokens(c.Text) || c.Tokens > tokens {
			t.Fatalf("chunk %d has %d tokens (estimated %d), limit %d", i, c.Tokens, EstimateTokens(c.Text), tokens)
		}
		switch {
		case i == 0 && a != 0:
			t.Fatalf("the first chunk begins at word %d", a)
		case i > 0 && (a <= prevA || b <= prevB || a > prevB):
			t.Fatalf("chunk %d is words [%d, %d), the one before [%d, %d): not in order or a gap", i, a, b, prevA, prevB)
		case i > 0 && overlap == 0 && a != prevB:
			t.Fatalf("chunk %d is words [%d, %d), the one before [%d, %d): an overlap when none was asked", i, a, b, prevA, prevB)
		case i > 0 && overlap > 0:
			// An overlap that can hold a word has one; whole sentences fill it but for at
			// most a sentence (give or take the rounding of the estimates).
			shared := EstimateTokens(joinWords(words[a:prevB]))
			if a == prevB && overlap >= longestWord || shared > overlap || overlap >= 2*longestSentence && shared < overlap/2-2 {
				t.Fatalf("chunk %d overlaps the one before by %d words, %d tokens; want up to %d", i, prevB-a, shared, overlap)
			}
		}
		prevA, prevB = a, b
	}
	if prevB != len(words) {
		t.Fatalf("the chunks end at word %d of %d", prevB, len(words))
	}
}

func joinWords(ws []word) string {
	texts := make([]string, len(ws))
	for i, w := range ws {
		texts[i] = w.text
	}
	return strings.Join(texts, " ")
}

// FuzzSplit checks what holds of any text: chunks within the limit, and between them the
// input's every non-space character, in order.
func FuzzSplit(f *testing.F) {
	f.Add("Hello world. This is a test.\n\nA new paragraph!", 10, 3)
	f.Add(strings.Repeat("x", 300)+" y", 8, 2)
	f.Add("今天天气很好。我们去公园吧！", 8, 2)
	f.Add("a\r\n\r\nb\u2029c\u3000d", 8, -1)
	f.Fuzz(func(t *testing.T, in string, tokens, overlap int) {
		o := Options{Tokens: tokens % 2000, Overlap: overlap % 1000}
		limit, _ := o.limits()
		runes := []rune(in)
		squeeze := func(rs []rune) string {
			return strings.Join(strings.FieldsFunc(string(rs), unicode.IsSpace), "")
		}
		chunks := Split(in, o)
		if len(chunks) == 0 {
			if strings.TrimFunc(in, unicode.IsSpace) != "" {
				t.Fatalf("no chunks of %q", in)
			}
			return
		}
		end := 0
		for i, c := range chunks {
			if c.Index != i || c.Tokens > limit || c.Start >= c.End || c.End > len(runes) || c.Tokens != EstimateTokens(c.Text) {
				t.Fatalf("chunk %+v, limit %d", c, limit)
			}
			if squeeze([]rune(c.Text)) != squeeze(runes[c.Start:c.End]) {
				t.Fatalf("chunk %d is %q, the input's [%d, %d) %q", i, c.Text, c.Start, c.End, string(runes[c.Start:c.End]))
			}
			if i > 0 && (c.Start <= chunks[i-1].Start || c.End <= end) {
				t.Fatalf("chunk %d [%d, %d) does not move on from [%d, %d)", i, c.Start, c.End, chunks[i-1].Start, end)
			}
			if gap := runes[min(end, c.Start):c.Start]; i > 0 && squeeze(gap) != "" {
				t.Fatalf("chunk %d leaves out %q", i, string(gap))
			}
			end = c.End
		}
		if squeeze(runes[:chunks[0].Start]) != "" || squeeze(runes[end:]) != "" {
			t.Fatalf("the chunks [%d, %d) leave out text of %q", chunks[0].Start, end, in)
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocabulary := strings.Fields("the a refund policy order shipping customer days business return item within account password reset delivery tracking number e.g. 3.5")
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		for range 1 + rng.IntN(6) {
			for range 1 + rng.IntN(20) {
				sb.WriteString(vocabulary[rng.IntN(len(vocabulary))] + " ")
			}
			sb.WriteString("end. ")
		}
		sb.WriteString("\n\n")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Split(text, Options{})
	}
}
