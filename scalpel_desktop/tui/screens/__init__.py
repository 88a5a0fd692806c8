"""The dashboard's screens: one module per tab."""
