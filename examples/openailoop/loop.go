package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
)

// Tool runs one tool call from its JSON arguments.
type Tool func(ctx context.Context, arguments string) (string, error)

// Ask puts an approval question to a human: yes or no, and why.
type Ask func(ctx context.Context, question string) (approve bool, reason string)

// Loop is a host's agent loop over a plain model SDK, which has no hooks:
// it sends the conversation to the model, runs each tool call of the
// answer (ChatCompletionMessage.ToolCalls) through the gate, gives every
// call's outcome back as its tool message, and repeats until the model
// answers without tool calls.
func Loop(ctx context.Context, client openai.Client, g *toolgate.Gate, caller string,
	params openai.ChatCompletionNewParams, tools map[string]Tool, ask Ask) (string, error) {
	for {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		if len(resp.Choices) == 0 {
			return "", errors.New("the model sent no choice")
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			out, err := dispatch(ctx, g, toolgate.Call{Tool: tc.Function.Name, ID: tc.ID,
				Arguments: []byte(tc.Function.Arguments), Caller: caller}, tools, ask)
			if err != nil {
				return "", err
			}
			params.Messages = append(params.Messages, openai.ToolMessage(out, tc.ID))
		}
	}
}

// dispatch runs one call through the gate and returns what the model
// reads: the tool's output, its failure, or the gate's explanation of why
// it did not run. An error means the gate could not record; the loop ends.
func dispatch(ctx context.Context, g *toolgate.Gate, c toolgate.Call, tools map[string]Tool, ask Ask) (string, error) {
	d, err := g.Before(ctx, c)
	if err == nil && d.Verdict == toolgate.AskApproval {
		if yes, why := ask(ctx, d.Approval.Question); yes {
			_, err = g.Approve(ctx, d.Approval.ID, toolgate.DefaultApprover, why)
		} else {
			err = g.Deny(ctx, d.Approval.ID, toolgate.DefaultApprover, why)
		}
		if err == nil {
			d, err = g.Before(ctx, d.Call) // the same call: Allow once approved, Refuse when denied
		}
	}
	switch {
	case err != nil:
		return "", err
	case d.Verdict == toolgate.AskApproval:
		return "not run: waiting for " + strings.Join(d.Approval.Awaiting, ", "), nil
	case d.Verdict == toolgate.Refuse:
		return d.Explanation, nil
	}
	out, runErr := "", fmt.Errorf("no tool %q", c.Tool)
	if run, ok := tools[c.Tool]; ok {
		out, runErr = run(ctx, string(c.Arguments))
	}
	if _, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(out), Err: runErr}); err != nil && !errors.Is(err, kernel.ErrOverrun) {
		return "", err
	}
	if runErr != nil {
		return "error: " + runErr.Error(), nil
	}
	return out, nil
}
