"""The Textual TUI: live dual heat maps with inspection."""
