package redact

// Error returns err with the secrets s finds hidden from its message
// (a nil s finds the token shapes only). errors.Is and errors.As still
// see err, and an error with no secret in its message is returned as it
// is, so comparing it with == keeps working.
func Error(err error, s *Set) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := s.String(msg)
	if red == msg {
		return err
	}
	return &redactedError{err: err, msg: red}
}

// redactedError is an error whose message had secrets in it.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
