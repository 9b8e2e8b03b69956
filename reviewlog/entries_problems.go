package reviewlog

// The entries that report problems of the mailbox, on either side. Each
// type's comment is its event's documentation; the keys are listed as the
// line holds them. A problem entry names what it concerns: each key
// beside message is written only when its field is set.

// ForwardingWarningEntry ([ForwardingWarning]) reports a recoverable
// mailbox problem: an invalid request file, a wrong target, a refused
// response, a malformed optional field.
//
// Keys: error, message, requestId, requestPath, requestSha256,
// requesterAgentName, requesterSessionId, responsePath, source,
// targetSessionId.
type ForwardingWarningEntry struct {
	// Message says what happened.
	Message string
	// Error is the error behind it, if there is one; nil writes no key.
	Error error
	// RequestID names the request concerned; nil writes no key.
	RequestID *string
	// Parties, when set, adds who asked whom, as the serving node's
	// entries about a request carry it; nil writes none of its keys.
	Parties *Parties
	// RequestPath and ResponsePath are the files concerned; "" writes no
	// key (a file concerned has a path).
	RequestPath, ResponsePath string
}

// ForwardingErrorEntry ([ForwardingError]) reports a mailbox failure that
// lost or delayed work: a response that could not be written, grants that
// could not be recorded or journaled, a request that could not be read or
// written, a panic while deciding.
//
// Keys: error, journal, message, requestId, requestPath, responsePath,
// stack.
type ForwardingErrorEntry struct {
	// Message says what failed.
	Message string
	// Error is the error behind it, if there is one; nil writes no key.
	Error error
	// RequestID names the request concerned; nil writes no key. (A
	// child's request id is written even when it is empty: it may be the
	// invalid id that failed.)
	RequestID *string
	// RequestPath, ResponsePath and Journal are the files concerned; ""
	// writes no key (a file concerned has a path).
	RequestPath, ResponsePath, Journal string
	// Stack is the goroutine's stack, for a panic; "" writes no key.
	Stack string
}

// Str returns a pointer to s, for an entry's optional RequestID.
func Str(s string) *string { return &s }

func (ForwardingWarningEntry) Event() string { return ForwardingWarning }
func (ForwardingErrorEntry) Event() string   { return ForwardingError }

func (e ForwardingWarningEntry) appendDetails(d details) {
	d.errText("error", e.Error)
	d.str("message", e.Message)
	d.strPtr(KeyRequestID, e.RequestID)
	d.strIfSet("requestPath", e.RequestPath)
	if p := e.Parties; p != nil {
		d.strIfSet(KeyRequestSHA256, p.RequestSHA256)
		d.str("requesterAgentName", p.RequesterAgentName)
		d.str("requesterSessionId", p.RequesterSessionID)
		d.uid(KeyRequesterUID, p.RequesterUID)
		d.strIfSet("responsePath", e.ResponsePath)
		d.str("source", source)
		d.str("targetSessionId", p.TargetSessionID)
		return
	}
	d.strIfSet("responsePath", e.ResponsePath)
}

func (e ForwardingErrorEntry) appendDetails(d details) {
	d.errText("error", e.Error)
	d.strIfSet("journal", e.Journal)
	d.str("message", e.Message)
	d.strPtr(KeyRequestID, e.RequestID)
	d.strIfSet("requestPath", e.RequestPath)
	d.strIfSet("responsePath", e.ResponsePath)
	d.strIfSet("stack", e.Stack)
}
