"""Small widgets the dashboard screens share."""
