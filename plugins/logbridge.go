package plugins

import (
	"fmt"
	"io"
	"log"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// hclogBridge is the hclog.Logger go-plugin logs its lifecycle through,
// written to the broker's zerolog diagnostic log.
//
// It has one deliberate exception. go-plugin parses a plugin's stderr
// through logger.Named(<binary name>), and its parser does unchecked type
// assertions: a plugin that prints {"@message": 1} panics the broker
// (go-plugin v1.8.0, observed). go-plugin skips that parser when the
// sub-logger reports level Off, so the sub-logger named silenced does, and
// this package parses the raw stderr itself (pluginOutput).
type hclogBridge struct {
	zl       zerolog.Logger
	name     string
	silenced string // the Named() argument whose logger is Off
	off      bool
	implied  []any
}

var _ hclog.Logger = (*hclogBridge)(nil)

func newHCLogBridge(zl zerolog.Logger, silenced string) *hclogBridge {
	return &hclogBridge{zl: zl, silenced: silenced}
}

// zlevel maps go-plugin's levels to zerolog's. Trace is dropped: at that
// level go-plugin logs every chunk a plugin writes to stdout or stderr,
// which would let a chatty plugin flood the broker's log.
func (b *hclogBridge) zlevel(level hclog.Level) zerolog.Level {
	switch level {
	case hclog.Debug:
		return zerolog.DebugLevel
	case hclog.Info, hclog.NoLevel:
		return zerolog.InfoLevel
	case hclog.Warn:
		return zerolog.WarnLevel
	case hclog.Error:
		return zerolog.ErrorLevel
	}
	return zerolog.Disabled
}

// Log writes one go-plugin message. Arguments are key/value pairs; a
// value is rendered by type, so nothing in them can panic the bridge.
func (b *hclogBridge) Log(level hclog.Level, msg string, args ...any) {
	if b.off {
		return
	}
	e := b.zl.WithLevel(b.zlevel(level))
	if e == nil {
		return
	}
	if b.name != "" {
		e = e.Str("logger", b.name)
	}
	all := append(append([]any(nil), b.implied...), args...)
	for i := 0; i < len(all); i += 2 {
		if i+1 == len(all) {
			e = e.Interface(hclog.MissingKey, all[i])
			break
		}
		key := fmt.Sprint(all[i])
		switch v := all[i+1].(type) {
		case error:
			e = e.AnErr(key, v)
		case hclog.Format:
			if len(v) > 0 {
				e = e.Str(key, fmt.Sprintf(fmt.Sprint(v[0]), v[1:]...))
			}
		case string:
			e = e.Str(key, v)
		default:
			e = e.Str(key, fmt.Sprint(v))
		}
	}
	e.Msg(msg)
}

func (b *hclogBridge) Trace(msg string, args ...any) { b.Log(hclog.Trace, msg, args...) }
func (b *hclogBridge) Debug(msg string, args ...any) { b.Log(hclog.Debug, msg, args...) }
func (b *hclogBridge) Info(msg string, args ...any)  { b.Log(hclog.Info, msg, args...) }
func (b *hclogBridge) Warn(msg string, args ...any)  { b.Log(hclog.Warn, msg, args...) }
func (b *hclogBridge) Error(msg string, args ...any) { b.Log(hclog.Error, msg, args...) }

func (b *hclogBridge) enabled(level hclog.Level) bool {
	return !b.off && b.zl.GetLevel() <= b.zlevel(level) && b.zlevel(level) != zerolog.Disabled
}

func (b *hclogBridge) IsTrace() bool { return b.enabled(hclog.Trace) }
func (b *hclogBridge) IsDebug() bool { return b.enabled(hclog.Debug) }
func (b *hclogBridge) IsInfo() bool  { return b.enabled(hclog.Info) }
func (b *hclogBridge) IsWarn() bool  { return b.enabled(hclog.Warn) }
func (b *hclogBridge) IsError() bool { return b.enabled(hclog.Error) }

func (b *hclogBridge) ImpliedArgs() []any { return append([]any(nil), b.implied...) }

func (b *hclogBridge) With(args ...any) hclog.Logger {
	c := *b
	c.implied = append(append([]any(nil), b.implied...), args...)
	return &c
}

func (b *hclogBridge) Name() string { return b.name }

// Named returns a sub-logger; the one for the plugin's stderr is Off.
func (b *hclogBridge) Named(name string) hclog.Logger {
	c := *b
	if b.name != "" {
		c.name = b.name + "." + name
	} else {
		c.name = name
	}
	if name == b.silenced {
		c.off = true
	}
	return &c
}

func (b *hclogBridge) ResetNamed(name string) hclog.Logger {
	c := *b
	c.name = name
	c.off = name == b.silenced
	return &c
}

// SetLevel is ignored: the broker's logger decides its own level.
func (b *hclogBridge) SetLevel(hclog.Level) {}

// GetLevel reports Off for the silenced sub-logger and for a disabled
// broker logger.
func (b *hclogBridge) GetLevel() hclog.Level {
	if b.off {
		return hclog.Off
	}
	switch b.zl.GetLevel() {
	case zerolog.TraceLevel, zerolog.DebugLevel:
		return hclog.Debug
	case zerolog.InfoLevel:
		return hclog.Info
	case zerolog.WarnLevel:
		return hclog.Warn
	case zerolog.ErrorLevel, zerolog.FatalLevel, zerolog.PanicLevel:
		return hclog.Error
	}
	return hclog.Off
}

func (b *hclogBridge) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return log.New(b.StandardWriter(nil), "", 0)
}

func (b *hclogBridge) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	if b.off {
		return io.Discard
	}
	return b.zl
}
