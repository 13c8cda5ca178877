package torture

// cannot are the fault kinds a platform cannot inject, each with the
// reason; nothing is missing on Linux and macOS. On Windows there is no
// SIGSTOP, so no replica can be paused (bank grade marks its pause check
// n/a there for the same reason).
func cannot(goos string) map[string]string {
	if goos == "windows" {
		return map[string]string{"replica-pause": "pausing a process needs SIGSTOP, which Windows does not have"}
	}
	return nil
}

// forPlatform is the fault kinds asked for that the platform can inject,
// and those it left out with the reason (nil when none was).
func forPlatform(asked []string, goos string) (kept []string, leftOut map[string]string) {
	lacks := cannot(goos)
	for _, f := range asked {
		if why, ok := lacks[f]; ok {
			if leftOut == nil {
				leftOut = map[string]string{}
			}
			leftOut[f] = why
			continue
		}
		kept = append(kept, f)
	}
	return kept, leftOut
}
