package scenarios

import (
	"context"

	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/scenarios/lab"
)

// adaPaysBola is the lesson's request: Ada sends Bola ₦10,000.
const adaPaysBola = `{"from": 1, "to": 2, "amountKobo": 1000000}`

// sendAndShow: the app sends body with a new key, and shows what came back.
func sendAndShow(ctx context.Context, lab *lab.Lab, app *client.Client, body string) error {
	res, err := app.Send(ctx, lab.NewKey(), []byte(body))
	if err != nil {
		return err
	}
	lab.Reply(answer(res), "app shows: %s", transferLabel(res.Body))
	return nil
}
