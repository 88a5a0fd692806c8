"""What scalpel shows on the user's desktop, and what that desktop can show.

``icons``     the icon drawn for each state (the tray shows it; the login
              service writes it next to the XDG autostart entry; assets/ is
              regenerated from it).
``tray_host`` whether this session can show a tray with a menu: a display,
              PyGObject and GTK 3, a StatusNotifier watcher or an XEmbed tray.

Neutral ground between the frontends and the service: tray/, service/ and
cli/ may import it; it imports none of them (Pillow and, lazily, gi only).
"""
