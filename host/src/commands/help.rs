//! The command's help past its list of commands: examples, where the
//! answerers come from, exit statuses, logs.

pub const AFTER_HELP: &str = "\
Examples:
  ask-user schema
      Print the tool definition to hand to a model.
  ask-user ask examples/deploy.json
      Ask the questions in deploy.json at this terminal; print the tool result.
  ask-user ask examples/deploy.json > result.json
      The same, with only the result in result.json (the terminal is still asked).
  ask-user ask examples/deploy.json --answers examples/deploy.answers.json
      Answered from a file first; what it does not answer goes to the terminal.
  ask-user ask examples/deploy.json --web
      Answer in a browser or at this terminal, whichever is first: open the address it
      prints (loopback, with a token).
  ask-user ask examples/deploy.json --config examples/config.toml
      Answerers from a config file (script rules, a bridge process, the terminal).
  echo '{\"questions\":[]}' | ask-user ask -
      Arguments from standard input (this one fails with EMPTY_QUESTIONS).
  ask-user mcp
      An MCP server on stdio: register it in Claude Code, Codex, Cursor, VS Code or goose.

Answerers: with --config FILE, or else $XDG_CONFIG_HOME/ask-user/config.toml
(~/.config/ask-user/config.toml) when it exists, the chain is that file's;
otherwise it is the terminal alone. --answers goes first in any chain. With no
terminal (a service, CI), the terminal answerer passes, and a call nobody
answers ends with NO_PROVIDER.

Exit status: 0 answered, 1 the tool returned an error result (still printed
as JSON on standard output), 2 bad usage or an unreadable file.

Logs: warnings go to standard error; ASK_USER_LOG sets the level
(e.g. ASK_USER_LOG=debug, or ask_user_seam=debug for each ask).";
