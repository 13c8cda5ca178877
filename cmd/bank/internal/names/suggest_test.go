package names

import "testing"

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	names := []string{"naive", "crash", "concurrent", "no-fencing", "no-lock-expiry", "list", "all"}
	for typed, want := range map[string]string{
		"crsh":     " (did you mean crash?)",
		"conc":     " (did you mean concurrent?)",
		"no-fence": " (did you mean no-fencing?)",
		"naiev":    " (did you mean naive?)",
		"x":        "",
		"database": "",
	} {
		if got := DidYouMean(typed, names); got != want {
			t.Errorf("%q: got %q, want %q", typed, got, want)
		}
	}
}
