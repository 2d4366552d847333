"""The live screen: its logic from recorded events, the Textual app with Pilot, a real terminal."""
