package engine

import (
	"context"

	"github.com/orbitrun/orbit/tracing"
)

// tracer returns the part that exports the log's runs as OpenTelemetry
// traces, or nil when tracing is off (no tracing.endpoint in the config and
// no OTLP endpoint in the engine's environment). The endpoint is read when
// the engine starts: changing it takes a restart.
func (e *Engine) tracer(ctx context.Context) (func(context.Context) error, error) {
	endpoint := e.config.get().Tracing.Endpoint
	if !tracing.Enabled(endpoint) {
		return nil, nil
	}
	exp, err := tracing.NewExporter(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	t := tracing.New(e.log, exp, e.id, e.log.Embedded(), e.logger)
	e.logger.Info("exporting traces", "endpoint", endpoint)
	return t.Run, nil
}
