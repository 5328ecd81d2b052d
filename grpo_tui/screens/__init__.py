"""The app's screens, one per place a user goes: the runs list, a run's monitor, the new-run form, compare,
the reward inspection, a transcript, and the small dialogs (confirm, extend). A screen routes the messages its
widgets post and reads runs through executors and services, never a run folder's files itself.
"""
