package registry

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// A weighted route puts first a Provider drawn by its weight (3:1:0 here), the others after it
// in the route's order; a Provider of weight 0 is never first, but stays in the failover order.
func TestWeightedRoutesShareByWeight(t *testing.T) {
	t.Parallel()
	ps := []*v1alpha1.Provider{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}, {ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	const draws = 20_000
	first := map[string]int{}
	for range draws {
		got := byWeight(ps, []int32{3, 1, 0})
		if len(got) != 3 || got[2].Name != "c" {
			t.Fatalf("order %v: every Provider once, c last", names(got))
		}
		first[got[0].Name]++
		if rest := names(got[1:]); rest != "b,c" && rest != "a,c" {
			t.Fatalf("after %s come %s, want the others in the route's order", got[0].Name, rest)
		}
	}
	// 3:1 is 75 %; the bounds are more than ten standard deviations (0.3 %) wide.
	if share := float64(first["a"]) / draws; share < 0.70 || share > 0.80 || first["c"] != 0 {
		t.Errorf("first: %v of %d, want a about 75 %%, c never", first, draws)
	}
}

func names(ps []*v1alpha1.Provider) string {
	out := ""
	for i, p := range ps {
		if i > 0 {
			out += ","
		}
		out += p.Name
	}
	return out
}
