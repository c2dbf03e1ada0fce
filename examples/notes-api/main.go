// Command notes-api is the notes API's Lambda function: API Gateway HTTP
// API (payload 2.0, JWT authorizer) events, answered by package notes.
// Its effects are delivered by the other function, cmd/effects.
// Everything is built once per execution environment, so that the replay
// cache answers a warm retry with no DynamoDB call.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sync-events/sync-events/examples/notes-api/notes"
)

// The environment the template sets.
const (
	envNotesTable  = "NOTES_TABLE"
	envLedgerTable = "IDEMPOTENCY_TABLE"
	// envWebhook, if set, gives each POST /notes a note.created webhook
	// effect; the effects function (cmd/effects) delivers it.
	envWebhook = "NOTES_WEBHOOK_URL"
)

// replayCacheBytes bounds the replay cache of one execution environment.
const replayCacheBytes = 16 << 20

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	svc, err := newService(context.Background(), log)
	if err != nil {
		log.Error("start-up failed", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(svc.Handle)
}

func newService(ctx context.Context, log *slog.Logger) (*notes.Service, error) {
	notesTable, ledgerTable := os.Getenv(envNotesTable), os.Getenv(envLedgerTable)
	if notesTable == "" || ledgerTable == "" {
		return nil, errMissingEnv
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return notes.New(notes.Config{
		Client:     dynamodb.NewFromConfig(cfg),
		NotesTable: notesTable, LedgerTable: ledgerTable,
		CacheBytes: replayCacheBytes,
		Log:        log,
		Webhook:    os.Getenv(envWebhook) != "",
	}), nil
}

type startupError string

func (e startupError) Error() string { return string(e) }

const errMissingEnv = startupError(envNotesTable + " and " + envLedgerTable + " must be set")
