from console.sandbox.server import main

main()
