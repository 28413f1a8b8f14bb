from gravimeta.cli import main

main()
