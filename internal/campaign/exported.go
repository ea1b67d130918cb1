// The parts of the campaign engine that other runner commands (a bisect)
// use in their own directories.

package campaign

// ErrorsOf lists the errors of type T that err is, or that it joins
// (errors.Join, also nested), in order: every fault of a validation that
// returns them all.
func ErrorsOf[T error](err error) []T {
	if t, ok := err.(T); ok {
		return []T{t}
	}
	var out []T
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, ErrorsOf[T](e)...)
		}
	}
	return out
}

// LockDir takes the lock that Execute and RemoveData hold while they work
// in a campaign directory, for another runner command that works in such a
// directory (a bisect's, whose data directories RemoveData removes). It
// fails at once when another runner holds it; release lets go of it.
func LockDir(dir string) (release func(), err error) { return lockOut(dir) }
