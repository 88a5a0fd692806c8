"""Schema migrations, one module each: mNNN_name.py with SQL or apply(conn)."""
