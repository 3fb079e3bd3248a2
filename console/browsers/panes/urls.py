"""The processes, files, computer, tools, script and replays panes of a session, under
/o/<org>/browsers/<session_id>/."""

from django.urls import path

from console.browsers.panes import computer, files, head, processes, replays, screen, script, tools

app_name = "panes"

urlpatterns = [
    path("processes/", processes.process_list, name="processes"),
    path("processes/exec/", processes.process_exec, name="exec"),
    path("processes/<str:process_id>/", processes.process_detail, name="process"),
    path("processes/<str:process_id>/status/", processes.process_status, name="process-status"),
    path("processes/<str:process_id>/stream/", processes.process_stream, name="process-stream"),
    path("processes/<str:process_id>/stdin/", processes.process_stdin, name="process-stdin"),
    path("processes/<str:process_id>/kill/", processes.process_kill, name="process-kill"),
    path("files/", files.file_list, name="files"),
    path("files/file/", files.file_detail, name="file"),
    path("files/download/", files.download, name="download"),
    path("files/zip/", files.download_zip, name="dir-zip"),
    path("files/mkdir/", files.make_directory, name="mkdir"),
    path("files/upload/", files.upload, name="upload"),
    path("files/upload-zip/", files.upload_zip, name="upload-zip"),
    path("files/move/", files.move, name="move"),
    path("files/delete/", files.delete, name="delete"),
    path("files/watch/", files.watch_start, name="watch"),
    path("files/watch/<str:watch_id>/", files.watch_view, name="watch-view"),
    path("files/watch/<str:watch_id>/stream/", files.watch_stream, name="watch-stream"),
    path("files/watch/<str:watch_id>/stop/", files.watch_stop, name="watch-stop"),
    path("computer/", computer.computer_pane, name="computer"),
    path("computer/screenshot.png", computer.screenshot, name="screenshot"),
    path("computer/batch/", computer.batch, name="batch"),
    path("computer/<str:action>/", computer.computer_action, name="computer-action"),
    path("head/", head.session_head, name="head"),
    path("screen/", screen.screen_pane, name="screen"),
    path("screen/stream/", screen.screen_stream, name="screen-stream"),
    path("screen/control/", screen.screen_control, name="screen-control"),
    path("screen/input/", screen.screen_input, name="screen-input"),
    path("screen/tab/", screen.screen_tab, name="screen-tab"),
    path("screen/presence/", screen.screen_presence, name="screen-presence"),
    path("tools/", tools.tools_pane, name="tools"),
    path("tools/curl/", tools.curl, name="curl"),
    path("tools/extensions/", tools.load_extension, name="extensions"),
    path("tools/logs/", tools.logs_stream, name="logs-stream"),
    path("script/", script.script_pane, name="script"),
    path("script/run/", script.script_run, name="script-run"),
    path("script/executors/", script.script_executors, name="script-executors"),
    path("script/stop/", script.script_stop, name="script-stop"),
    path("script/reset/", script.script_reset, name="script-reset"),
    path("replays/", replays.replay_list, name="replays"),
    path("replays/start/", replays.replay_start, name="replay-start"),
    path("replays/<str:replay_id>/", replays.player, name="replay"),
    path("replays/<str:replay_id>/stop/", replays.replay_stop, name="replay-stop"),
    path("replays/<str:replay_id>/video/", replays.video, name="replay-video"),
]
